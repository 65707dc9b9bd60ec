package trimtools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
)

// The tests of this file check the Trimmer's memory of conversations
// (Options.Conversations) against a Trimmer without it: whatever the host
// does with its history between calls, both must return equal results.

// requestPoints returns the lengths k at which h[:k] is a request a host
// could send: h[k-1] is a request and h[:k] is a valid history.
func requestPoints(h []processor.Message) []int {
	var out []int
	for k := 1; k <= len(h); k++ {
		if h[k-1].Kind == processor.Request && processor.Validate(h[:k]) == nil {
			out = append(out, k)
		}
	}
	return out
}

// diffHistories returns "" when got holds the same messages as want
// ([processor.Equal] one by one), and otherwise says how they differ: the
// lengths, or a cmp.Diff (-want +got) of the first message that differs.
func diffHistories(want, got []processor.Message) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if !processor.Equal(want[i], got[i]) {
			d := cmp.Diff(want[i], got[i])
			if d == "" {
				d = fmt.Sprintf("-%#v\n+%#v", want[i], got[i])
			}
			return fmt.Sprintf("message %d (-want +got):\n%s", i, d)
		}
	}
	return ""
}

// isInput reports whether out is the very slice in (same array, same
// length).
func isInput(out, in []processor.Message) bool {
	return len(out) == len(in) && unsafe.SliceData(out) == unsafe.SliceData(in)
}

// untracked returns a Trimmer with opts but no memory of conversations and
// no memo: the reference the tracked Trimmer is checked against.
func untracked(opts trimtools.Options) *trimtools.Trimmer {
	opts.Conversations, opts.MemoBytes = -1, -1
	return trimtools.New(opts)
}

// compare runs tracked and ref on in and returns their results, with an
// error when the tracked result differs from the reference, is not a valid
// history, alters the last message, is a new slice where the reference is
// the input itself (or the other way round), or, when it is not the input
// itself, is returned with spare capacity.
func compare(tracked, ref *trimtools.Trimmer, in []processor.Message) (got, want []processor.Message, err error) {
	ctx := context.Background()
	want, err = ref.Process(ctx, in)
	if err != nil {
		return nil, nil, fmt.Errorf("untracked: %w", err)
	}
	got, err = tracked.Process(ctx, in)
	if err != nil {
		return nil, nil, fmt.Errorf("tracked: %w", err)
	}
	if d := diffHistories(want, got); d != "" {
		return nil, nil, fmt.Errorf("%d messages in: tracked result differs from the untracked one: %s", len(in), d)
	}
	if err := processor.Validate(got); err != nil {
		return nil, nil, fmt.Errorf("%d messages in: invalid result: %w", len(in), err)
	}
	if !processor.Equal(got[len(got)-1], in[len(in)-1]) {
		return nil, nil, fmt.Errorf("%d messages in: last message altered", len(in))
	}
	if isInput(got, in) != isInput(want, in) {
		return nil, nil, fmt.Errorf("%d messages in: result is the input itself: %v, untracked: %v", len(in), isInput(got, in), isInput(want, in))
	}
	if !isInput(got, in) && cap(got) != len(got) {
		return nil, nil, fmt.Errorf("%d messages in: result of length %d has capacity %d: not clipped", len(in), len(got), cap(got))
	}
	return got, want, nil
}

// kept is a result as returned and a copy of it taken then.
type kept struct {
	out, copy []processor.Message
}

// keep returns a record of out, to check later that it never changed.
func keep(out []processor.Message) kept {
	return kept{out: out, copy: processor.Clone(out)}
}

// checkKept returns an error for the first kept result that changed
// since it was returned.
func checkKept(ks []kept) error {
	for i, k := range ks {
		if d := diffHistories(k.copy, k.out); d != "" {
			return fmt.Errorf("result %d (%d messages) changed after it was returned: %s", i, len(k.out), d)
		}
	}
	return nil
}

// words make the random contents of tool returns: ASCII and multi-byte
// text, with line breaks.
var words = []string{"line", "of", "output", "ok", "42", "error:", "café", "日本語", "😀", "Привет", "\n", "\t", "e\u0301"}

// randomText returns random words, lo to hi bytes long (about).
func randomText(r *rand.Rand, lo, hi int) string {
	n := lo + r.IntN(hi-lo+1)
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()
}

// withReturnsAroundCap returns a copy of h whose tool returns hold 50 to 400
// bytes, in turn as plain text, JSON and multi-part content: with a cap of
// 100 characters, most are trimmed and some are not.
func withReturnsAroundCap(r *rand.Rand, h []processor.Message) []processor.Message {
	h = processor.Clone(h)
	n := 0
	for i := range h {
		for j, p := range h[i].Parts {
			ret, ok := p.(processor.ToolReturn)
			if !ok {
				continue
			}
			ret = processor.ToolReturn{ToolName: ret.ToolName, ToolCallID: ret.ToolCallID}
			switch n % 3 {
			case 0:
				ret.Content = randomText(r, 50, 400)
			case 1:
				ret.JSON, _ = json.Marshal(map[string]string{"out": randomText(r, 40, 390)})
			case 2:
				ret.Contents = []string{randomText(r, 10, 200), randomText(r, 39, 199)}
			}
			h[i].Parts[j] = ret
			n++
		}
	}
	return h
}

// testHistory is a history the tests replay, and the cap to trim it with.
type testHistory struct {
	name     string
	h        []processor.Message
	maxChars int
	random   bool // a random history: long enough, with many long returns
}

// randomHistories returns random histories of about n messages with many
// tool returns over a cap of 100 characters.
func randomHistories(seeds []uint64, n int) []testHistory {
	var out []testHistory
	for _, seed := range seeds {
		r := rand.New(rand.NewPCG(seed, 7))
		h := withReturnsAroundCap(r, processortest.RandomHistory(r, n))
		out = append(out, testHistory{name: fmt.Sprintf("random %d", seed), h: h, maxChars: 100, random: true})
	}
	return out
}

// quietStart returns a copy of h whose tool returns in its first n
// messages are short: the trimmer returns the input itself until the
// history is past n messages.
func quietStart(th testHistory, n int) testHistory {
	h := processor.Clone(th.h)
	for i := range h[:min(n, len(h))] {
		for j, p := range h[i].Parts {
			if r, ok := p.(processor.ToolReturn); ok {
				h[i].Parts[j] = processor.ToolReturn{ToolName: r.ToolName, ToolCallID: r.ToolCallID, Content: "ok"}
			}
		}
	}
	th.name += fmt.Sprintf(", short returns in the first %d messages", n)
	th.h = h
	return th
}

// shippedHistories returns the shipped transcripts, each with the default
// cap and with a cap of 100 characters.
func shippedHistories(t *testing.T) []testHistory {
	var out []testHistory
	for _, f := range transcripts.Shipped(t) {
		h, err := model.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		out = append(out,
			testHistory{name: name, h: h},
			testHistory{name: name + " cap 100", h: h, maxChars: 100})
	}
	return out
}

// growth is a way for a host to pass its growing history: visit is called
// with each history the host passes, for each request point of h.
type growth struct {
	name string
	// extends: results must sometimes extend the previous one in place.
	extends bool
	replay  func(h []processor.Message, points []int, visit func(in []processor.Message))
}

var growths = []growth{
	{
		// A host that keeps its full history in one array: every request
		// passes a prefix of it.
		name: "one array", extends: true,
		replay: func(h []processor.Message, points []int, visit func([]processor.Message)) {
			for _, k := range points {
				visit(h[:k])
			}
		},
	},
	{
		// A host that appends each turn to its history: the array is
		// reallocated now and then, and the history's address changes.
		name: "append", extends: true,
		replay: func(h []processor.Message, points []int, visit func([]processor.Message)) {
			var host []processor.Message
			for _, k := range points {
				host = append(host, h[len(host):k]...)
				visit(host)
			}
		},
	},
	{
		// A host that keeps its full history in one array and runs the
		// trimmer before every third request only: the history grows by
		// several messages at a time.
		name: "one array, every third request",
		replay: func(h []processor.Message, points []int, visit func([]processor.Message)) {
			for i, k := range points {
				if i%3 == 2 || i == len(points)-1 {
					visit(h[:k])
				}
			}
		},
	},
	{
		// A host that builds a new slice for every request: nothing is
		// ever tracked.
		name: "new array each time",
		replay: func(h []processor.Message, points []int, visit func([]processor.Message)) {
			for _, k := range points {
				visit(slices.Clone(h[:k]))
			}
		},
	},
}

// TestTrackedFullHistory replays histories request by request, as a host
// that keeps its full history does, with a tracked Trimmer and an
// untracked one. At each request the results must be equal, valid, with
// the last message intact and clipped; at the end every result returned
// must be unchanged and the input untouched.
func TestTrackedFullHistory(t *testing.T) {
	hists := append(randomHistories([]uint64{1, 2, 3, 4}, 150), randomHistories([]uint64{5}, 400)...)
	hists = append(hists, quietStart(randomHistories([]uint64{6}, 200)[0], 80), quietStart(randomHistories([]uint64{7}, 200)[0], 120))
	hists = append(hists, shippedHistories(t)...)
	options := []struct {
		name string
		opts trimtools.Options
	}{
		{"default", trimtools.Options{}},
		{"KeepLast 1", trimtools.Options{KeepLast: 1}},
		{"KeepLast 5", trimtools.Options{KeepLast: 5}},
		{"KeepLast 40", trimtools.Options{KeepLast: 40}},
		{"no memo", trimtools.Options{MemoBytes: -1}},
	}
	extended := 0 // results that extended the previous one in place, in all
	for _, th := range hists {
		points := requestPoints(th.h)
		if len(points) == 0 {
			t.Fatalf("%s: no request point", th.name)
		}
		for _, o := range options {
			for _, g := range growths {
				t.Run(th.name+"/"+o.name+"/"+g.name, func(t *testing.T) {
					opts := o.opts
					opts.MaxChars = th.maxChars
					tracked, ref := trimtools.New(opts), untracked(opts)
					before := processor.Clone(th.h)
					var ks []kept
					var prev, last []processor.Message
					inPlace, trimmed := 0, 0
					g.replay(th.h, points, func(in []processor.Message) {
						got, _, err := compare(tracked, ref, in)
						if err != nil {
							t.Fatal(err)
						}
						if !isInput(got, in) {
							trimmed++
							if len(prev) > 0 && len(got) > len(prev) && unsafe.SliceData(got) == unsafe.SliceData(prev) {
								inPlace++
							}
						}
						ks = append(ks, keep(got))
						prev, last = got, in
					})
					if err := checkKept(ks); err != nil {
						t.Error(err)
					}
					if err := processortest.Diff(before, th.h); err != nil {
						t.Errorf("input changed: %v", err)
					}
					extended += inPlace
					t.Logf("%d requests, %d trimmed, %d extended in place, %d messages at the end", len(ks), trimmed, inPlace, len(last))
					if th.random && g.extends && inPlace == 0 {
						t.Error("no result extended the previous one in place: the tracked path was not exercised")
					}
				})
			}
		}
	}
	if extended == 0 && !t.Failed() {
		t.Error("no result extended the previous one in place")
	}
}

// host is a host's history in a TestTrackedHostChanges case, the
// trimmers it is passed to, and the requests passed so far.
type host struct {
	t            *testing.T
	h            []processor.Message // the history, changed in place
	points       []int               // its request points
	keepLast     int
	tracked, ref *trimtools.Trimmer
	k            int                 // length of the last history passed
	want         []processor.Message // a copy of the last untracked result
}

// pass passes h[:k] to both trimmers and checks the results.
func (s *host) pass(k int) {
	s.t.Helper()
	_, want, err := compare(s.tracked, s.ref, s.h[:k])
	if err != nil {
		s.t.Fatal(err)
	}
	s.k, s.want = k, processor.Clone(want)
}

// grow passes the next n request points.
func (s *host) grow(n int) {
	s.t.Helper()
	for _, p := range pointsAfter(s.points, s.k, n) {
		s.pass(p)
	}
}

// next returns the next request point.
func (s *host) next() int {
	s.t.Helper()
	p := pointsAfter(s.points, s.k, 1)
	if len(p) == 0 {
		s.t.Fatalf("no request point after %d", s.k)
	}
	return p[0]
}

// passChanged passes h[:k] after message i was changed, and checks that
// the change shows in the result: else the case would check nothing.
func (s *host) passChanged(k, i int) {
	s.t.Helper()
	before := s.want
	s.pass(k)
	if i < len(before) && processor.Equal(before[i], s.want[i]) {
		s.t.Fatalf("message %d: the change does not show in the untracked result: the case checks nothing", i)
	}
}

// findReturn returns the index of the first message in h[from:end]
// holding a tool return that ok accepts, and the part's index.
func (s *host) findReturn(from, end int, ok func(processor.ToolReturn) bool) (int, int) {
	s.t.Helper()
	for i := max(from, 0); i < end; i++ {
		for j, p := range s.h[i].Parts {
			if r, isRet := p.(processor.ToolReturn); isRet && ok(r) {
				return i, j
			}
		}
	}
	s.t.Fatalf("no tool return to change in messages %d to %d", from, end)
	return -1, -1
}

// early returns the index of the first message in the first half of the
// history passed last holding a tool return that ok accepts, and the
// part's index.
func (s *host) early(ok func(processor.ToolReturn) bool) (int, int) {
	s.t.Helper()
	return s.findReturn(2, s.k/2, ok)
}

// long reports whether r is over the cap of 100 characters.
func long(r processor.ToolReturn) bool {
	return utf8.RuneCountInString(r.ToolReturnContent()) > 100
}

func short(r processor.ToolReturn) bool { return !long(r) }

func longJSON(r processor.ToolReturn) bool { return r.JSON != nil && long(r) }

func longMultiPart(r processor.ToolReturn) bool { return r.Contents != nil && long(r) }

// withReturns returns a new request message like m, its tool returns
// holding content instead.
func withReturns(m processor.Message, content string) processor.Message {
	parts := make([]processor.Part, len(m.Parts))
	for j, p := range m.Parts {
		if r, ok := p.(processor.ToolReturn); ok {
			p = processor.ToolReturn{ToolName: r.ToolName, ToolCallID: r.ToolCallID, Content: content}
		}
		parts[j] = p
	}
	return processor.NewRequest(parts...)
}

// hasReturn reports whether m holds a tool return.
func hasReturn(m processor.Message) bool {
	return slices.ContainsFunc(m.Parts, func(p processor.Part) bool {
		_, ok := p.(processor.ToolReturn)
		return ok
	})
}

// upper changes the lower-case ASCII letters of b to upper case, in place.
func upper(b []byte) {
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
}

// pointsAfter returns the first n request points past k.
func pointsAfter(points []int, k, n int) []int {
	i, _ := slices.BinarySearch(points, k+1)
	return points[i:min(i+n, len(points))]
}

// pointsBefore returns the request point n places before k, a point.
func pointsBefore(points []int, k, n int) int {
	i, _ := slices.BinarySearch(points, k)
	return points[max(i-n, 0)]
}

var longContent = strings.Repeat("a different and long tool output\n", 20)

// TestTrackedHostChanges has a host change its history between calls,
// in place, after a few tracked requests: each change must be seen, the
// tracked result equal to the untracked one on every request after it.
func TestTrackedHostChanges(t *testing.T) {
	changes := []struct {
		name string
		run  func(s *host)
	}{
		{"replace an early trimmed message", func(s *host) {
			i, _ := s.early(long)
			s.h[i] = withReturns(s.h[i], "now short")
			s.passChanged(s.next(), i)
			s.grow(3)
		}},
		{"replace an early short message with a long one", func(s *host) {
			i, _ := s.early(short)
			s.h[i] = withReturns(s.h[i], longContent)
			s.passChanged(s.next(), i)
			s.grow(3)
		}},
		{"replace the message before the kept ones, same length", func(s *host) {
			i, _ := s.findReturn(s.k-s.keepLast-10, s.k-s.keepLast, long)
			s.h[i] = withReturns(s.h[i], longContent)
			s.passChanged(s.k, i)
			s.grow(3)
		}},
		{"replace the last message passed", func(s *host) {
			// Message k-1 is among the kept ones: the result holds it as
			// it is; on the next request it is trimmed, from its new
			// content.
			for !hasReturn(s.h[s.k-1]) {
				s.grow(1)
			}
			i := s.k - 1
			s.h[i] = withReturns(s.h[i], longContent+"!")
			s.passChanged(s.k, i)
			s.passChanged(pointsAfter(s.points, i+s.keepLast, 1)[0], i)
			s.grow(3)
		}},
		{"replace a part in place", func(s *host) {
			i, j := s.early(long)
			r := s.h[i].Parts[j].(processor.ToolReturn)
			s.h[i].Parts[j] = processor.ToolReturn{ToolName: r.ToolName, ToolCallID: r.ToolCallID, Content: "REPLACED " + longContent}
			s.passChanged(s.next(), i)
			s.grow(3)
		}},
		{"replace a part in place, same length", func(s *host) {
			i, j := s.early(long)
			r := s.h[i].Parts[j].(processor.ToolReturn)
			s.h[i].Parts[j] = processor.ToolReturn{ToolName: r.ToolName, ToolCallID: r.ToolCallID, Content: "REPLACED " + longContent}
			s.passChanged(s.k, i)
			s.grow(3)
		}},
		{"change JSON bytes in place", func(s *host) {
			i, j := s.early(longJSON)
			upper(s.h[i].Parts[j].(processor.ToolReturn).JSON)
			s.passChanged(s.next(), i)
			s.grow(3)
		}},
		{"change JSON bytes in place, same length", func(s *host) {
			i, j := s.early(longJSON)
			upper(s.h[i].Parts[j].(processor.ToolReturn).JSON)
			s.passChanged(s.k, i)
			s.grow(3)
		}},
		{"change a multi-part string in place", func(s *host) {
			i, j := s.early(longMultiPart)
			s.h[i].Parts[j].(processor.ToolReturn).Contents[0] = "CHANGED " + longContent
			s.passChanged(s.next(), i)
			s.grow(3)
		}},
		{"roll back", func(s *host) {
			s.pass(pointsBefore(s.points, s.k, 3))
			s.grow(6)
		}},
		{"roll back below the tracked length", func(s *host) {
			i, _ := slices.BinarySearch(s.points, 32)
			s.pass(s.points[i-1])
			s.grow(20)
		}},
		{"roll back, change, grow", func(s *host) {
			s.pass(pointsBefore(s.points, s.k, 3))
			i, _ := s.findReturn(s.k-s.keepLast-10, s.k-s.keepLast, long)
			s.h[i] = withReturns(s.h[i], "short after the roll-back")
			s.passChanged(s.next(), i)
			s.grow(3)
		}},
		{"same length twice", func(s *host) {
			s.pass(s.k)
			s.pass(s.k)
			s.grow(3)
		}},
		{"jump far ahead", func(s *host) {
			s.pass(pointsAfter(s.points, s.k+60, 1)[0])
			s.grow(3)
		}},
	}
	base := randomHistories([]uint64{11}, 200)[0].h
	points := requestPoints(base)
	for _, keepLast := range []int{2, 1, 6} {
		for _, c := range changes {
			t.Run(fmt.Sprintf("%s/KeepLast %d", c.name, keepLast), func(t *testing.T) {
				opts := trimtools.Options{MaxChars: 100, KeepLast: keepLast}
				s := &host{
					t: t, h: processor.Clone(base), points: points, keepLast: keepLast,
					tracked: trimtools.New(opts), ref: untracked(opts),
				}
				// A few requests past the tracked length, then the change.
				for _, p := range points {
					if p > 80 {
						break
					}
					s.pass(p)
				}
				c.run(s)
			})
		}
	}
}

// TestTrackedConcurrent has goroutines run one Trimmer at once on the same
// growing history (the same array) and on different histories. Every
// result must equal the untracked one, and none may change after it was
// returned. Run it with -race.
func TestTrackedConcurrent(t *testing.T) {
	hs := randomHistories([]uint64{21, 22, 23, 24}, 120)
	tests := []struct {
		name string
		opts trimtools.Options
	}{
		{"default", trimtools.Options{MaxChars: 100}},
		{"one conversation", trimtools.Options{MaxChars: 100, Conversations: 1}},
		{"two conversations", trimtools.Options{MaxChars: 100, Conversations: 2}},
		{"KeepLast 5", trimtools.Options{MaxChars: 100, KeepLast: 5}},
	}
	const rounds = 3
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tracked, ref := trimtools.New(tt.opts), untracked(tt.opts)
			// Three goroutines on the first history, one on each other,
			// and one appending to its own copy of the first.
			type job struct {
				h []processor.Message
				g growth
			}
			jobs := []job{{hs[0].h, growths[0]}, {hs[0].h, growths[0]}, {hs[0].h, growths[0]}, {hs[0].h, growths[1]}}
			for _, th := range hs[1:] {
				jobs = append(jobs, job{th.h, growths[0]})
			}
			results := make([][]kept, len(jobs))
			var wg sync.WaitGroup
			for n, j := range jobs {
				points := requestPoints(j.h)
				wg.Go(func() {
					for range rounds {
						j.g.replay(j.h, points, func(in []processor.Message) {
							got, _, err := compare(tracked, ref, in)
							if err != nil {
								t.Errorf("goroutine %d: %v", n, err)
								return
							}
							results[n] = append(results[n], keep(got))
						})
					}
				})
			}
			wg.Wait()
			for n, ks := range results {
				if err := checkKept(ks); err != nil {
					t.Errorf("goroutine %d: %v", n, err)
				}
			}
		})
	}
}

// TestConversationsOption interleaves the requests of a few conversations
// with several limits on the conversations remembered, tracking disabled
// included: the results must equal the untracked ones and never change.
func TestConversationsOption(t *testing.T) {
	hs := randomHistories([]uint64{31, 32, 33}, 120)
	tests := []struct {
		name  string
		limit int // Options.Conversations
		convs int // conversations interleaved
	}{
		{"disabled", -1, 2},
		{"one conversation", 1, 1},
		{"one remembered, two interleaved", 1, 2},
		{"two remembered, three interleaved", 2, 3},
		{"default, three interleaved", 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := trimtools.Options{MaxChars: 100, Conversations: tt.limit}
			tracked, ref := trimtools.New(opts), untracked(opts)
			points := make([][]int, tt.convs)
			for c := range points {
				points[c] = requestPoints(hs[c].h)
			}
			var ks []kept
			arrays := map[*processor.Message]int{} // result arrays, and the request that returned each first
			for step := 0; ; step++ {
				done := true
				for c := range tt.convs {
					if step >= len(points[c]) {
						continue
					}
					done = false
					in := hs[c].h[:points[c][step]]
					got, _, err := compare(tracked, ref, in)
					if err != nil {
						t.Fatalf("conversation %d, request %d: %v", c, step, err)
					}
					ks = append(ks, keep(got))
					if isInput(got, in) {
						continue
					}
					if n, ok := arrays[unsafe.SliceData(got)]; ok && tt.limit < 0 {
						t.Fatalf("conversation %d, request %d: tracking disabled, but the result extends that of request %d", c, step, n)
					}
					arrays[unsafe.SliceData(got)] = len(ks) - 1
				}
				if done {
					break
				}
			}
			if err := checkKept(ks); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestTrackedRecycledParts swaps a message for an equal copy and then
// reuses the old message's parts slice or metadata for something else, as
// a host with pooled buffers might: the next result must show what the
// history holds now, not the recycled buffer an earlier result shared.
func TestTrackedRecycledParts(t *testing.T) {
	long := strings.Repeat("x", 3000)
	h := []processor.Message{processor.UserMessage("start")}
	for i := range 20 {
		id := fmt.Sprintf("c%d", i)
		h = append(h,
			processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "cat", Args: "{}"}).WithMeta(processor.Meta{ModelName: "m"}),
			processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: "cat", Content: long}),
		)
	}
	h = append(h, processor.TextMessage("done"), processor.UserMessage("again"), processor.TextMessage("ok"), processor.UserMessage("last"))
	tests := []struct {
		name    string
		i       int // the message recycled
		recycle func(h []processor.Message, i int)
	}{
		{"request parts", 0, func(h []processor.Message, i int) {
			old := h[i].Parts
			h[i].Parts = slices.Clone(old)
			old[0] = processor.UserPrompt{Content: "RECYCLED BUFFER"}
		}},
		{"response parts", 1, func(h []processor.Message, i int) {
			old := h[i].Parts
			h[i].Parts = slices.Clone(old)
			old[0] = processor.ToolCall{ToolCallID: "zz", ToolName: "recycled", Args: "{}"}
		}},
		{"metadata of a trimmed request", 2, func(h []processor.Message, i int) {
			h[i] = h[i].WithMeta(processor.Meta{Name: "now"})
		}},
		{"metadata", 1, func(h []processor.Message, i int) {
			old := h[i].Meta
			h[i] = h[i].WithMeta(*old)
			*old = processor.Meta{ModelName: "RECYCLED"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := slices.Clone(h)
			for i := range h {
				h[i].Parts = slices.Clone(h[i].Parts)
			}
			tracked, ref := trimtools.New(trimtools.Options{}), untracked(trimtools.Options{})
			n := len(h)
			for range 2 { // tracked from the second sighting on
				if _, _, err := compare(tracked, ref, h[:n-2]); err != nil {
					t.Fatal(err)
				}
			}
			tt.recycle(h, tt.i)
			got, want, err := compare(tracked, ref, h)
			if err != nil {
				t.Fatal(err)
			}
			if !processor.Equal(got[tt.i], h[tt.i]) && !processor.Equal(want[tt.i], got[tt.i]) {
				t.Errorf("message %d: got %v, the history holds %v", tt.i, got[tt.i], h[tt.i])
			}
		})
	}
}
