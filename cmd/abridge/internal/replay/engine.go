package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"time"

	"github.com/abridge-go/abridge/cmd/abridge/internal/replay/internal/fidelity"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/receipt"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/summary"
	"github.com/abridge-go/abridge/transcript"
)

// run is the state of one transcript's replay.
type run struct {
	mode     Mode
	trim     *trimtools.Trimmer
	trimOpts trimtools.Options
	win      *window.Window
	primary  *meter
	fallback *meter
	rec      *model.Recorder
	counter  *countingModel
	onEvent  func(context.Context, window.Event)
	seen     map[uint64]struct{} // fingerprints of messages a summarizer was given
	seed     maphash.Seed
	failures map[string]int
	fidelity *fidelity.Counter

	// Per-transcript bookkeeping, indexed by the message's position in
	// the transcript (its origin).
	compacted []bool
	fp        []uint64
	paths     map[string]struct{} // paths named by compacted messages
	written   map[string]struct{} // paths written by compacted messages
	summary   string              // the summary text sent last
	hasSumm   bool
	prevJSON  []byte
	buf       []byte
	// The messages of the previous and of the current request, as sent,
	// for the reuse ceiling.
	prevSent, curSent []sent

	// JSON of each message as sent, by origin; the trimmer leaves a
	// message the same once it is KeepLast messages from the end, so a
	// message has at most two forms: [0] near the end, [1] further back.
	// jsonOf holds the message each was made from: a message the trimmer
	// leaves as it is has one JSON for both.
	json   [][2][]byte
	jsonOf [][2]processor.Message
	// pathsOf holds the paths each message of the transcript writes and
	// mentions, as the trimmer leaves it, before any clearing: what the
	// summaries of the compacted messages had to name.
	pathsOf [][2][]string
	// trimmedAll is the transcript as the trimmer leaves its messages
	// outside the last ones, for the paths the summaries should name.
	trimmedAll []processor.Message
	markerSumm string // the summary of the marker whose JSON is markerJSON
	markerJSON []byte
	keepLast   int
	noCache    bool          // serialize every request in full (tests compare)
	cpuCost    time.Duration // what reading the thread's CPU time costs

	// Virtual time: the clock moves a turn between requests and a
	// summary's latency while a request waits for one; the runner writes
	// the summaries the window writes ahead when they would be ready.
	clock         *vclock
	runner        *vrunner // nil when Options.Window.Background is set
	turn, latency time.Duration
	waits         int // the summaries the current request waited for
	deferred      bool
	wasted        int64 // summarizer input of the summaries written ahead and never used
	ahead         int   // summaries started ahead

	// With Options.Receipts: the window's failed and finished events, as
	// they came, and the number of the request each came in (request is
	// the one being replayed).
	keepEvents bool
	events     []window.Event
	eventsAt   []int
	request    int
}

func newRun(opts Options) (*run, error) {
	r := &run{mode: opts.Mode, seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}, paths: map[string]struct{}{}, written: map[string]struct{}{}}
	if r.mode == 0 {
		r.mode = ModeProcessed
	}
	if r.mode != ModeProcessed && r.mode != ModeFull && r.mode != ModeFresh {
		return nil, fmt.Errorf("replay: unknown mode %v", r.mode)
	}
	wopts := opts.Window
	primary := wopts.Summarizer
	if primary == nil {
		switch opts.Summarizer {
		case "", SummarizerDigest:
			primary = summarizer.NewDigest(summarizer.DigestOptions{})
		case SummarizerRecorder:
			r.rec = model.NewRecorder(recordedSummary)
			primary = llm.New(r.rec, opts.LLM)
		case SummarizerModel:
			if opts.Model == nil {
				return nil, ErrNoModel
			}
			r.counter = &countingModel{m: opts.Model}
			primary = llm.New(r.counter, opts.LLM)
		default:
			return nil, fmt.Errorf("replay: unknown summarizer %q: want digest, recorder or model", opts.Summarizer)
		}
	}
	fallback := wopts.Fallback
	if fallback == nil {
		fallback = summarizer.NewDigest(summarizer.DigestOptions{})
	}
	r.primary = &meter{s: primary, seen: r.seen, seed: r.seed, rec: r.rec, before: r.foreground}
	r.fallback = &meter{s: fallback, seen: r.seen, seed: r.seed}
	wopts.Summarizer = r.primary
	wopts.Fallback = r.fallback
	r.onEvent = wopts.OnEvent
	wopts.OnEvent = r.event
	r.turn, r.latency = opts.Turn, opts.SummaryLatency
	if r.turn <= 0 {
		r.turn = DefaultTurn
	}
	if r.latency <= 0 {
		r.latency = DefaultSummaryLatency
	}
	r.clock = &vclock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if wopts.Now == nil {
		wopts.Now = r.clock.now
	}
	if wopts.Background == nil {
		r.runner = &vrunner{clock: r.clock, latency: r.latency}
		wopts.Background = r.runner
	}

	r.keepEvents = opts.Receipts
	r.win = window.New(wopts)
	r.trim, r.trimOpts = trimtools.New(opts.Trim), opts.Trim
	r.keepLast = r.trim.KeepLast()
	return r, nil
}

// foreground is called before each call of the primary summarizer: one
// made in a request (not by the runner, ahead of time) makes the request
// wait for the summary's latency.
func (r *run) foreground() {
	if r.runner != nil && r.runner.inBackground() {
		return
	}
	r.waits++
	r.clock.add(r.latency)
}

func (r *run) event(ctx context.Context, e window.Event) {
	switch e.Type {
	case window.EventDeferred:
		r.deferred = true
	case window.EventAheadStarted:
		r.ahead++
	case window.EventAheadWasted:
		r.wasted += int64(e.SummaryInput)
	}
	if r.keepEvents && (e.Type == window.EventFailed || e.Type == window.EventFinished) {
		r.events, r.eventsAt = append(r.events, e), append(r.eventsAt, r.request)
	}
	if e.Type == window.EventFailed {
		if r.failures == nil {
			r.failures = map[string]int{}
		}
		r.failures[e.Reason]++
	}
	if r.onEvent != nil {
		r.onEvent(ctx, e)
	}
}

// replay runs the processors before each assistant message of transcript.
func (r *run) replay(ctx context.Context, transcript []processor.Message) (Result, error) {
	// Processor CPU time is read per thread: keep the replay, and the
	// processors and summarizers it calls synchronously, on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r.cpuCost = readCost()
	res := Result{Messages: len(transcript)}
	n := len(transcript)
	r.compacted = make([]bool, n)
	r.fp = make([]uint64, n)
	r.json = make([][2][]byte, n)
	r.jsonOf = make([][2]processor.Message, n)
	r.fidelity = fidelity.New(transcript)

	// Prefix sums of the transcript's characters, raw and as the trimmer
	// leaves them in the middle of a history (for the naive baseline).
	raw := make([]int64, n+1)
	for i, m := range transcript {
		raw[i+1] = raw[i] + int64(processor.Chars(m))
	}
	res.TranscriptChars = raw[n]
	trimmedSum := raw
	r.trimmedAll = transcript
	// A trimmer of its own: the replay's would remember every output
	// trimmed here and trim none of them in the timed requests.
	if all, err := trimtools.New(r.trimOpts).Process(ctx, transcript); err == nil && len(all) == n {
		r.trimmedAll = all
		trimmedSum = make([]int64, n+1)
		for i, m := range all {
			trimmedSum[i+1] = trimmedSum[i] + int64(processor.Chars(m))
		}
	}

	r.marshalForms(transcript)
	r.pathsOf = make([][2][]string, n)
	for o := range r.trimmedAll {
		r.pathsOf[o][0], r.pathsOf[o][1] = summary.Paths(r.trimmedAll[o : o+1])
	}

	var raws []json.RawMessage
	if r.mode == ModeFresh {
		// Each message as the agent's request carries it (openai.ToParams).
		params, err := openai.ToParams(transcript)
		if err != nil {
			return Result{}, fmt.Errorf("encode the transcript as requests: %w", err)
		}
		raws = make([]json.RawMessage, len(params))
		for k, p := range params {
			if raws[k], err = json.Marshal(p); err != nil {
				return Result{}, fmt.Errorf("encode the transcript as requests: %w", err)
			}
		}
	}
	ident := make([]int, n)
	for i := range ident {
		ident[i] = i
	}
	var stored []processor.Message
	var origins []int
	next := 0
	for i, m := range transcript {
		if m.Kind != processor.Response {
			continue
		}
		if i == 0 || transcript[i-1].Kind != processor.Request {
			res.Skipped++
			continue
		}
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if res.Requests > 0 {
			// The previous request's model call; the summaries written
			// ahead that are ready by its end are there for this one.
			r.clock.add(r.turn)
		}
		if r.runner != nil {
			r.runner.advance(false)
		}
		r.waits, r.deferred = 0, false
		var in []processor.Message
		var inOrigins []int
		switch r.mode {
		case ModeFull:
			in, inOrigins = transcript[:i], ident[:i]
		case ModeFresh:
			var err error
			if in, err = r.decode(&res, raws[:i]); err != nil {
				return Result{}, fmt.Errorf("request %d: %w", res.Requests+1, err)
			}
			inOrigins = ident[:i]
		default:
			stored = append(stored, transcript[next:i]...)
			origins = append(origins, ident[next:i]...)
			next = i
			in, inOrigins = stored, origins
		}
		r.request = res.Requests + 1
		out, outOrigins, pt := r.step(ctx, &res, in, inOrigins, raw, trimmedSum)
		r.fidelity.Request(i, pt.sent)
		if r.mode == ModeProcessed {
			// The result is the host's: it appends to it.
			stored, origins = out, outOrigins
		}

		res.Requests++
		if r.waits > 0 {
			res.Waits++
			res.WaitTime += time.Duration(r.waits) * r.latency
		}
		if r.deferred {
			res.Deferred++
		}
		p := Point{
			Request:      res.Requests,
			CharsBefore:  int(raw[i]),
			CharsAfter:   pt.chars,
			TokensBefore: processor.EstimateTokens(transcript[:i]),
			TokensAfter:  processor.EstimateTokens(out),
			Compaction:   pt.compaction,
			JSONChars:    pt.json,
			ReusedChars:  pt.reused,
			CeilingChars: pt.ceiling,
		}
		res.Series = append(res.Series, p)
		res.sumCharsBefore += int64(p.CharsBefore)
		res.sumCharsAfter += int64(p.CharsAfter)
		res.sumTokensBefore += int64(p.TokensBefore)
		res.sumTokensAfter += int64(p.TokensAfter)
		if p.JSONChars > 0 {
			cached := float64(p.TokensAfter) * float64(p.ReusedChars) / float64(p.JSONChars)
			res.sumCachedTokens += cached
			res.sumUncachedTokens += float64(p.TokensAfter) - cached
		}
		res.MaxPromptCharsBefore = max(res.MaxPromptCharsBefore, p.CharsBefore)
		res.MaxPromptCharsAfter = max(res.MaxPromptCharsAfter, p.CharsAfter)
		res.MaxTokensBefore = max(res.MaxTokensBefore, p.TokensBefore)
		res.MaxTokensAfter = max(res.MaxTokensAfter, p.TokensAfter)
	}

	// The conversation ends: the summaries started ahead are paid for,
	// and those never used are wasted.
	if r.runner != nil {
		r.runner.advance(true)
	}
	if err := r.win.Close(ctx); err != nil {
		return Result{}, fmt.Errorf("close the window: %w", err)
	}
	res.AheadSummaries, res.WastedInputChars = r.ahead, r.wasted

	for o, c := range r.compacted {
		if !c {
			continue
		}
		res.CompactedMessages++
		if _, ok := r.seen[r.fp[o]]; !ok {
			res.Unsummarized++
		}
	}
	res.setFidelity(r.fidelity.Figures())
	res.Failures = r.failures
	res.UnsentMessages = r.primary.unsent
	res.SummarizerCalls = r.primary.calls
	res.FallbackCalls = r.fallback.calls
	res.SummarizerTime = r.primary.dur + r.fallback.dur
	switch {
	case r.rec != nil:
		res.SummarizerInputChars = callChars(r.rec.Calls())
	case r.counter != nil:
		res.SummarizerInputChars = r.counter.chars
	default:
		res.SummarizerInputChars = r.primary.input
	}
	res.finish()
	return res, nil
}

// receipts returns the receipts of the compactions replayed, made from
// the events kept, each naming conversation and its request.
func (r *run) receipts(conversation, writer string) []receipt.Receipt {
	var reasons receipt.Reasons
	var out []receipt.Receipt
	for i, e := range r.events {
		reason := reasons.Note(e)
		if e.Type != window.EventFinished {
			continue
		}
		rc := receipt.New(e, reason, writer)
		rc.Conversation, rc.Request = conversation, r.eventsAt[i]
		out = append(out, rc)
	}
	return out
}

// writerOf names who writes the summaries of a replay with opts when the
// window's summarizer succeeds.
func writerOf(opts Options) string {
	switch {
	case opts.Window.Summarizer != nil:
		return "custom summarizer"
	case opts.Summarizer == SummarizerRecorder:
		return "recording model"
	case opts.Summarizer == SummarizerModel:
		return receipt.WriterModel
	}
	return receipt.WriterDigest
}

// decode encodes raws as a request's JSON "messages" and decodes it into
// new memory, as a proxy receives a request, timing the decoding.
func (r *run) decode(res *Result, raws []json.RawMessage) ([]processor.Message, error) {
	data := transcript.JoinRawMessages(raws)
	c0, cpuOK := threadCPU()
	t0 := time.Now()
	h, err := transcript.Load(bytes.NewReader(data))
	res.DecodeTime += time.Since(t0)
	if c1, _ := threadCPU(); cpuOK {
		res.DecodeCPU += max(c1-c0-r.cpuCost, 0)
	}
	return h, err
}

// readCost estimates what one reading of the thread's CPU time costs: the
// smallest difference between two readings in a row.
func readCost() time.Duration {
	best := time.Duration(-1)
	for range 32 {
		a, ok := threadCPU()
		b, _ := threadCPU()
		if !ok {
			return 0
		}
		if d := b - a; best < 0 || d < best {
			best = d
		}
	}
	return max(best, 0)
}

// stepResult is what one request adds to the series.
type stepResult struct {
	chars      int
	compaction bool
	json       int // the request's JSON length
	reused     int // its common prefix with the previous request's
	ceiling    int // the most of it any trimming and summary could reuse
	// sent is what the request sent: the processors' output, or their
	// input when they failed.
	sent []processor.Message
}

// step processes one request's history and records its figures. It
// returns what is sent (the input itself when processing failed) and the
// origins of its messages (-1 for a summary marker).
func (r *run) step(ctx context.Context, res *Result, in []processor.Message, inOrigins []int, rawSum, trimmedSum []int64) ([]processor.Message, []int, stepResult) {
	invalid := func(err error) {
		res.InvalidRequests++
		if res.FirstError == "" {
			res.FirstError = fmt.Sprintf("request %d: %v", res.Requests+1, err)
		}
	}

	s0, sc0 := r.primary.dur+r.fallback.dur, r.primary.cpu+r.fallback.cpu
	calls0 := r.primary.calls + r.fallback.calls
	c0, cpuOK := threadCPU()
	t0 := time.Now()
	trimmed, err := r.trim.Process(ctx, in)
	var out []processor.Message
	if err == nil {
		out, err = r.win.Process(ctx, trimmed)
	}
	elapsed := time.Since(t0)
	c1, _ := threadCPU()
	res.ProcessorTime += max(elapsed-(r.primary.dur+r.fallback.dur-s0), 0)
	if cpuOK {
		// Take out the summarizers' time and what the readings cost: one
		// here and about one per summarizer call (the meter's readings
		// fall partly inside its own bracket, partly outside).
		calls := r.primary.calls + r.fallback.calls - calls0
		res.ProcessorCPU += max(c1-c0-(r.primary.cpu+r.fallback.cpu-sc0)-time.Duration(1+calls)*r.cpuCost, 0)
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return in, inOrigins, stepResult{chars: charsOf(in), sent: in}
		}
		invalid(fmt.Errorf("process: %w", err))
		return in, inOrigins, stepResult{chars: charsOf(in), sent: in}
	}

	st := stepResult{chars: charsOf(out), sent: out}
	if err := checkSent(in, out); err != nil {
		invalid(err)
	}

	// Locate the summary marker: what the window sends is the trimmed
	// history's head, the marker, and the trimmed history's tail.
	h, summ := -1, ""
	for k, m := range out {
		if s, _, ok := summary.ParseMarker(m); ok {
			h, summ = k, s
			break
		}
	}
	if h < 0 {
		if len(out) != len(trimmed) {
			invalid(fmt.Errorf("window dropped %d messages without a summary marker", len(trimmed)-len(out)))
			r.requestJSON(res, &st, out, nil, invalid)
			return in, inOrigins, st
		}
		r.requestJSON(res, &st, out, inOrigins, invalid)
		return out, inOrigins, st
	}
	t := len(out) - h - 1
	lo, hi := h, len(trimmed)-t
	if hi < lo || !sameMessages(out[:h], trimmed[:h]) || !sameOrCleared(out[h+1:], trimmed[hi:]) {
		invalid(errors.New("window output is not head, marker, tail of its input"))
		r.requestJSON(res, &st, out, nil, invalid)
		return in, inOrigins, st
	}
	outOrigins := make([]int, 0, len(out))
	outOrigins = append(outOrigins, inOrigins[:h]...)
	outOrigins = append(outOrigins, -1)
	outOrigins = append(outOrigins, inOrigins[hi:]...)
	r.requestJSON(res, &st, out, outOrigins, invalid)

	for k := lo; k < hi; k++ {
		o := inOrigins[k]
		if o < 0 || r.compacted[o] {
			continue
		}
		r.compacted[o] = true
		// As the summarizer gets it: its texts clipped (see
		// window.Options.SummaryClip).
		clipped, _ := summary.ClipTexts(trimmed[k], r.win.SummaryClip())
		r.fp[o] = fingerprint(r.seed, clipped)
		written, mentioned := r.pathsOf[o][0], r.pathsOf[o][1]
		for _, p := range written {
			r.paths[p] = struct{}{}
			r.written[p] = struct{}{}
		}
		for _, p := range mentioned {
			r.paths[p] = struct{}{}
		}
	}
	if !r.hasSumm || summ != r.summary {
		st.compaction = true
		res.Compactions++
		r.summary, r.hasSumm = summ, true
		for p := range r.paths {
			res.PathsCompacted++
			if strings.Contains(summ, p) {
				res.PathsKept++
			}
		}
		for p := range r.written {
			res.PathsWrittenCompacted++
			if strings.Contains(summ, p) {
				res.PathsWrittenKept++
			}
		}
	}
	// The naive baseline summarizes the whole transcript prefix outside
	// the head and the tail, again, on every request that sends a summary.
	if h < len(outOrigins)-1 {
		firstTail := outOrigins[h+1]
		if firstTail > h {
			res.NaiveSummarizerChars += rawSum[firstTail] - rawSum[h]
			res.NaiveTrimmedChars += trimmedSum[firstTail] - trimmedSum[h]
		}
	}
	return out, outOrigins, st
}

// checkSent checks what would be sent: a valid history ending with the
// unchanged last request.
func checkSent(in, out []processor.Message) error {
	if err := processor.Validate(out); err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	if !processor.Equal(out[len(out)-1], in[len(in)-1]) {
		return processor.ErrLastRequestAltered
	}
	return nil
}

// requestJSON converts what is sent to OpenAI params (an invalid request
// when that fails), serializes it as the sequence of its messages' JSON
// and adds its common prefix with the previous request, and its reuse
// ceiling, to the figures. origins, when known, lets it reuse each
// message's JSON from earlier requests and tells which messages the
// previous request also sent.
func (r *run) requestJSON(res *Result, st *stepResult, out []processor.Message, origins []int, invalid func(error)) {
	buf := r.buf[:0]
	cur := r.curSent[:0]
	for k, m := range out {
		s := sent{origin: -2}
		if origins != nil {
			s.origin = origins[k]
		}
		if s.origin < 0 {
			s.summary, _, s.marker = summary.ParseMarker(m)
		}
		b, err := r.messageJSON(m, k, len(out), s)
		if err != nil {
			// A message that does not convert is named by its place in
			// the request; one whose conversion marshals wrong is not.
			if _, cerr := openai.ToParams(out); cerr != nil {
				invalid(fmt.Errorf("to openai: %w", cerr))
			} else {
				invalid(fmt.Errorf("marshal request: %w", err))
			}
			r.forget()
			return
		}
		buf = append(buf, b...)
		s.json = b
		cur = append(cur, s)
	}
	st.json, st.reused = len(buf), commonPrefix(r.prevJSON, buf)
	st.ceiling = reuseCeiling(r.prevSent, cur)
	res.RequestChars += int64(st.json)
	res.ReusedChars += int64(st.reused)
	res.CeilingChars += int64(st.ceiling)
	r.buf, r.prevJSON = r.prevJSON, buf
	r.curSent, r.prevSent = r.prevSent, cur
}

// forget drops what the previous request sent: after an invalid one, the
// next request is compared with nothing.
func (r *run) forget() {
	r.prevJSON = r.prevJSON[:0]
	r.prevSent = r.prevSent[:0]
}

// sent is one message of a request, as the reuse ceiling sees it.
type sent struct {
	origin  int    // position in the transcript; -1 for a marker, -2 unknown
	json    []byte // its JSON as sent
	summary string // a marker's summary
	marker  bool
}

// reuseCeiling returns the most of the request cur that a provider's
// prompt cache could reuse from the request prev if every message both
// send at the same place (the same transcript message, or the same summary
// marker) were sent as the same bytes, and a new summary marker in place of
// an earlier one began with all of the earlier one. It is the reuse the
// window's choice of head, tail and compaction points allows, whatever the
// trimmer does to the messages and whatever the summaries say; what cur
// actually reuses is never more (the messages' JSON objects delimit
// themselves, so a byte match cannot run past the first message that
// differs).
func reuseCeiling(prev, cur []sent) int {
	n := 0
	for k, c := range cur {
		if k >= len(prev) {
			break
		}
		p := prev[k]
		same := c.origin >= 0 && c.origin == p.origin ||
			c.marker && p.marker && c.summary == p.summary ||
			bytes.Equal(c.json, p.json)
		if same {
			n += len(c.json)
			continue
		}
		part := commonPrefix(p.json, c.json)
		if c.marker && p.marker {
			part = max(part, min(len(c.json), len(p.json)))
		}
		return n + part
	}
	return n
}

// messageJSON returns the JSON of the OpenAI messages m (at position k of
// n, s telling its origin and, for a marker, its summary) converts to, from
// the cache when it holds it.
func (r *run) messageJSON(m processor.Message, k, n int, s sent) ([]byte, error) {
	o := s.origin
	if r.noCache || o == -2 {
		return marshalMessage(m)
	}
	if o < 0 {
		if s.marker && s.summary == r.markerSumm && r.markerJSON != nil {
			return r.markerJSON, nil
		}
		b, err := marshalMessage(m)
		if err == nil && s.marker {
			r.markerSumm, r.markerJSON = s.summary, b
		}
		return b, err
	}
	form := 0
	if k < n-r.keepLast {
		form = 1
	}
	for _, f := range [2]int{form, 1 - form} {
		if b := r.json[o][f]; b != nil && processor.Equal(m, r.jsonOf[o][f]) {
			r.json[o][form], r.jsonOf[o][form] = b, m
			return b, nil
		}
	}
	b, err := marshalMessage(m)
	if err == nil {
		r.json[o][form], r.jsonOf[o][form] = b, m
	}
	return b, err
}

// marshalForms fills the JSON cache with each message of the transcript as
// it is and as the trimmer leaves it (one JSON when they are the same), and
// sizes the requests' buffers, before the requests are timed: the garbage
// of serializing them would otherwise set off collections while the
// processors run, which slow them for work that is not theirs. A message
// that does not serialize is left for the request that sends it to report.
func (r *run) marshalForms(transcript []processor.Message) {
	if r.noCache {
		return
	}
	size := 0
	for o, m := range transcript {
		if b, err := marshalMessage(m); err == nil {
			r.json[o][0], r.jsonOf[o][0] = b, m
			size += len(b)
		}
		t := r.trimmedAll[o]
		if processor.Equal(t, m) {
			r.json[o][1], r.jsonOf[o][1] = r.json[o][0], r.jsonOf[o][0]
		} else if b, err := marshalMessage(t); err == nil {
			r.json[o][1], r.jsonOf[o][1] = b, t
		}
	}
	// The requests' buffers, grown once to about the most a request
	// holds: the whole transcript, less what the trimmer cuts, plus a
	// summary.
	r.buf, r.prevJSON = make([]byte, 0, size), make([]byte, 0, size)
}

func marshalMessage(m processor.Message) ([]byte, error) {
	params, err := openai.ToParams([]processor.Message{m})
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, p := range params {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		if len(params) == 1 {
			return b, nil
		}
		out = append(out, b...)
	}
	return out, nil
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	// Compare in blocks first: bytes.Equal is much faster than a loop.
	const block = 4096
	i := 0
	for i+block <= n && bytes.Equal(a[i:i+block], b[i:i+block]) {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func sameMessages(a, b []processor.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !processor.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameOrCleared reports whether a holds the messages of b, or some of them
// with their tool outputs cleared (window.Options.TailOutputs).
func sameOrCleared(a, b []processor.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if processor.Equal(a[i], b[i]) {
			continue
		}
		if a[i].Kind != b[i].Kind || len(a[i].Parts) != len(b[i].Parts) {
			return false
		}
		for j, p := range a[i].Parts {
			orig := b[i].Parts[j]
			if processor.Equal(processor.NewRequest(p), processor.NewRequest(orig)) {
				continue
			}
			r, ok := orig.(processor.ToolReturn)
			c, ok2 := p.(processor.ToolReturn)
			if !ok || !ok2 || c.ToolCallID != r.ToolCallID {
				return false
			}
			if n, ok := summary.ParsePlaceholder(c); !ok || n != processor.PartChars(r) {
				return false
			}
		}
	}
	return true
}

func charsOf(h []processor.Message) int {
	n := 0
	for _, m := range h {
		n += processor.Chars(m)
	}
	return n
}

func callChars(calls []model.Call) int64 {
	var n int64
	for _, c := range calls {
		for _, m := range c.Messages {
			n += int64(processor.Chars(m))
		}
	}
	return n
}
