package window

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/abridge-go/abridge/processor"

	"github.com/abridge-go/abridge/summary"
)

// memoLimit bounds each map of a memo; a full map is emptied.
const memoLimit = 4096

// remember sets m[k] to v, emptying m first when it is full (memoLimit).
// The memo's lock must be held.
func remember[K comparable, V any](m map[K]V, k K, v V) {
	if len(m) >= memoLimit {
		clear(m)
	}
	m[k] = v
}

// memo holds what a window remembers outside its store, every entry keyed
// by content: the marker text of a summary (by the summary), the
// references of markers it may trust, and the size a conversation's
// middle must reach before it is compacted again (by the conversation's
// key). Each map is bounded and emptied when full; losing an entry costs
// work, never a wrong result.
type memo struct {
	mu      sync.Mutex
	markers map[string]string
	parsed  map[string]parsedMarker
	refs    map[string]string // the reference of a summary, by the summary
	trusted map[string]struct{}
	waits   map[Key]int
	retried map[Digest]time.Time // fallback spans the summarizer was asked again for, and when

	// verified holds the content of spans' histories by their digests,
	// with the hash state after them (see Window.spanDigest).
	verified verifiedMap[Digest]
	// heads holds the hash state after a conversation's head, by the
	// head's key.
	heads verifiedMap[Key]
}

// headState returns the hash state after head when the memo has it for a
// head of the same content under key k.
func (m *memo) headState(k Key, head []processor.Message) ([]byte, bool) {
	return m.heads.match(&m.mu, k, head)
}

// rememberHead remembers state as the hash state after head (copied),
// under its key k.
func (m *memo) rememberHead(k Key, head []processor.Message, state []byte) {
	m.heads.put(&m.mu, k, head, state)
}

// verified is the content of a span's head and covered messages, and the
// SHA-256 state after them: a history whose first messages have the same
// content (sameContent, message by message) has the span's digest without
// hashing them again, and the state goes on from there when a compaction
// needs the digest of more.
type verified struct {
	msgs  []processor.Message // a processor.Clone: shares strings, no slices
	state []byte
	chars int
	// matches counts the histories that matched msgs; see adoptAt.
	matches atomic.Uint64
}

// adoptAt reports whether the n-th match of an entry (from 1) replaces its
// messages with the matching history's: at the 1st, 2nd, 4th, 8th… match.
// Strings that share their bytes compare without reading them, and a
// history decoded by the same cache (openaimw's, a proxy's) shares the
// bytes of the strings it decoded before; one decoded anew (a cache that
// evicted the conversation, a second middleware) does not, so every
// comparison would read the whole span again. Adopting the history at
// doubling intervals makes the comparisons cheap again after at most as
// many matches as came before, for a copy of the messages (no bytes)
// logarithmic in the matches.
func adoptAt(n uint64) bool { return n&(n-1) == 0 }

// verifiedMap holds verified contents by key K, within limit characters
// and entries: a put that would pass either empties it first.
type verifiedMap[K comparable] struct {
	byKey          map[K]*verified
	chars          int // characters of the messages byKey holds
	limit, entries int
}

func newVerifiedMap[K comparable](limit, entries int) verifiedMap[K] {
	return verifiedMap[K]{byKey: map[K]*verified{}, limit: limit, entries: entries}
}

// match returns the hash state remembered under k when history has the
// content of the messages remembered with it. mu guards v.
func (v *verifiedMap[K]) match(mu *sync.Mutex, k K, history []processor.Message) ([]byte, bool) {
	mu.Lock()
	e := v.byKey[k]
	mu.Unlock()
	if e == nil || len(e.msgs) != len(history) {
		return nil, false
	}
	for i := range e.msgs {
		if !sameContent(&history[i], &e.msgs[i]) {
			return nil, false
		}
	}
	if n := e.matches.Add(1); adoptAt(n) {
		a := &verified{msgs: processor.Clone(history), state: e.state, chars: e.chars}
		a.matches.Store(n)
		mu.Lock()
		if v.byKey[k] == e {
			v.byKey[k] = a
		}
		mu.Unlock()
	}
	return e.state, true
}

// put remembers msgs (copied) with state under k, unless they are over a
// quarter of the limit. mu guards v.
func (v *verifiedMap[K]) put(mu *sync.Mutex, k K, msgs []processor.Message, state []byte) {
	chars := 0
	for _, msg := range msgs {
		chars += processor.Chars(msg)
	}
	if chars > v.limit/4 {
		return
	}
	e := &verified{msgs: processor.Clone(msgs), state: state, chars: chars}
	mu.Lock()
	defer mu.Unlock()
	if old := v.byKey[k]; old != nil {
		v.chars -= old.chars
	}
	if v.chars+chars > v.limit || len(v.byKey) >= v.entries {
		clear(v.byKey)
		v.chars = 0
	}
	v.byKey[k] = e
	v.chars += chars
}

// Bounds of a memo's verified contents: the spans' histories, and the
// conversations' heads (characters of their messages, and entries).
const (
	verifiedLimit   = 64 << 20
	verifiedEntries = 1024
	headsLimit      = 16 << 20
)

func (m *memo) init() {
	m.markers = map[string]string{}
	m.parsed = map[string]parsedMarker{}
	m.refs = map[string]string{}
	m.trusted = map[string]struct{}{}
	m.waits = map[Key]int{}
	m.retried = map[Digest]time.Time{}
	m.verified = newVerifiedMap[Digest](verifiedLimit, verifiedEntries)
	m.heads = newVerifiedMap[Key](headsLimit, memoLimit)
}

// match returns the hash state after history when history has the content
// of the messages remembered for digest d.
func (m *memo) match(d Digest, history []processor.Message) ([]byte, bool) {
	return m.verified.match(&m.mu, d, history)
}

// verify remembers that msgs (copied) have digest d, with the hash state
// after them.
func (m *memo) verify(d Digest, msgs []processor.Message, state []byte) {
	m.verified.put(&m.mu, d, msgs, state)
}

// parsedMarker is what summary.ParseMarker returned for a text.
type parsedMarker struct {
	summary, ref string
	ok           bool
}

// isMarker reports whether msg is a marker, as summary.IsMarker tells.
func (m *memo) isMarker(msg processor.Message) bool {
	_, _, ok := m.parseMarker(msg)
	return ok
}

// parseMarker is summary.ParseMarker, remembering the answer for texts
// that start like a marker (checking a marker's reference hashes its
// summary); the markers this window writes are known from the start.
func (m *memo) parseMarker(msg processor.Message) (sum, ref string, ok bool) {
	text, ok := markerCandidate(msg)
	if !ok {
		return "", "", false
	}
	m.mu.Lock()
	p, known := m.parsed[text]
	m.mu.Unlock()
	if !known {
		p.summary, p.ref, p.ok = summary.ParseMarker(msg)
		m.mu.Lock()
		remember(m.parsed, text, p)
		m.mu.Unlock()
	}
	return p.summary, p.ref, p.ok
}

// markerCandidate returns the text of msg when it is a request of one user
// prompt whose text starts with summary.Prefix: what may be a marker.
func markerCandidate(msg processor.Message) (string, bool) {
	if msg.Kind != processor.Request || len(msg.Parts) != 1 {
		return "", false
	}
	u, ok := msg.Parts[0].(processor.UserPrompt)
	if !ok {
		return "", false
	}
	text := u.Content
	if u.Contents != nil {
		if len(u.Contents) != 1 || u.Contents[0].Type != "text" {
			return "", false
		}
		text = u.Contents[0].Text
	}
	return text, strings.HasPrefix(text, summary.Prefix)
}

// markerText returns the text of the marker of summary s, and remembers
// the marker as parsed and the summary's reference (see ref).
func (m *memo) markerText(s string) string {
	m.mu.Lock()
	t, ok := m.markers[s]
	m.mu.Unlock()
	if ok {
		return t
	}
	t, norm, ref := summary.MarkerRef(s)
	m.mu.Lock()
	remember(m.markers, s, t)
	remember(m.parsed, t, parsedMarker{summary: norm, ref: ref, ok: true})
	remember(m.refs, s, ref)
	m.mu.Unlock()
	return t
}

// ref returns summary.Ref(s), remembered by s: a compaction needs the
// reference of its summary more than once.
func (m *memo) ref(s string) string {
	m.mu.Lock()
	r, ok := m.refs[s]
	m.mu.Unlock()
	if ok {
		return r
	}
	r = summary.Ref(s)
	m.mu.Lock()
	remember(m.refs, s, r)
	m.mu.Unlock()
	return r
}

// trust records that markers with reference ref were written by a window.
func (m *memo) trust(ref string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	remember(m.trusted, ref, struct{}{})
}

// trusts reports whether trust(ref) was called (and not forgotten since).
func (m *memo) trusts(ref string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.trusted[ref]
	return ok
}

// wait returns the size a middle must reach before the conversation k is
// compacted again (0: no wait).
func (m *memo) wait(k Key) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waits[k]
}

// setWait records that a middle smaller than n characters is not worth
// compacting in conversation k.
func (m *memo) setWait(k Key, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	remember(m.waits, k, n)
}

// result is what writing one summary gave.
type result struct {
	summary string
	failure *failure
	err     error
	usage   processor.Usage // what the summarizer's model calls used
}

// flights lets concurrent requests that need the same summary (the same
// content to cover, told by its digest) share one summarizer call.
type flights struct {
	mu sync.Mutex
	m  map[Digest]*flight
}

type flight struct {
	done chan struct{}
	res  result
}

func (f *flights) init() { f.m = map[Digest]*flight{} }

// do runs fn for d unless a call for d is under way, in which case it
// waits for that call's result and reports it as shared. A result that
// failed because the first caller's context ended is not shared: the
// waiting caller runs fn itself. do returns ctx's error when ctx ends
// while it waits.
func (f *flights) do(ctx context.Context, d Digest, fn func() result) (result, bool, error) {
	for {
		f.mu.Lock()
		fl, busy := f.m[d]
		if !busy {
			fl = &flight{done: make(chan struct{})}
			f.m[d] = fl
			f.mu.Unlock()
			return f.run(d, fl, fn), false, nil
		}
		f.mu.Unlock()
		select {
		case <-fl.done:
		case <-ctx.Done():
			return result{}, false, ctx.Err()
		}
		if fl.res.err == nil {
			return fl.res, true, nil
		}
		// The first caller's context ended; try again.
	}
}

// run runs fn as the flight fl for d, and ends the flight, panic or not.
func (f *flights) run(d Digest, fl *flight, fn func() result) result {
	defer func() {
		f.mu.Lock()
		delete(f.m, d)
		f.mu.Unlock()
		close(fl.done)
	}()
	fl.res = result{err: errFlightAborted}
	fl.res = fn()
	return fl.res
}

// errFlightAborted is the result of a flight whose function panicked: the
// callers waiting for it write their own summary.
var errFlightAborted = errors.New("summary not written")

// mayRetry reports whether a fallback span with digest d may be written
// again by the summarizer now: not when this window tried within the last
// cooldown. It records the try.
func (m *memo) mayRetry(d Digest, now time.Time, cooldown time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if last, ok := m.retried[d]; ok && now.Sub(last) < cooldown {
		return false
	}
	remember(m.retried, d, now)
	return true
}
