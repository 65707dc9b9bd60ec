// Package cleartools provides abridge's tool-output clearing processor: old
// tool outputs, which the model has acted on already, are replaced by a
// short placeholder naming the tool, the call, the original size and how to
// get the output back. Clearing is the cheapest way to keep a long tool
// loop small ("observation masking"), but every clear changes bytes the
// provider has cached, so the processor clears in batches: a round becomes
// clearable once KeepRounds newer rounds follow it, and the clearable
// rounds are cleared together only once clearing them saves at least
// MinSaving characters. Between two clears the history it returns keeps
// its prefix byte for byte, so the provider's prompt cache holds.
package cleartools

import (
	"context"
	"slices"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// Defaults of [Options].
const (
	// DefaultKeepRounds is the number of latest tool rounds never cleared.
	DefaultKeepRounds = 3
	// DefaultMinSaving is the least saving, in characters, for which
	// clearable outputs are cleared.
	DefaultMinSaving = 8000
)

// Options configures a [Clearer]. The zero value means all defaults.
type Options struct {
	// KeepRounds is how many of the latest tool rounds (a response
	// calling tools and the returns that answer it) keep their outputs;
	// 0 means DefaultKeepRounds (3), and a value below 1 is 1: the
	// outputs of the last round are never cleared, nor anything in the
	// last request.
	KeepRounds int
	// MinSaving is the least number of characters a clear must save: the
	// outputs of rounds that have become clearable are cleared together,
	// once clearing them all saves at least this much; 0 means
	// DefaultMinSaving (8000), a negative value clears every clearable
	// output at once (and breaks the prompt cache at every round).
	MinSaving int
	// TriggerTokens, when positive, replaces MinSaving by a size: the
	// clearable outputs are cleared together once the history, with what
	// was cleared before, passes this many tokens (estimated at 4
	// characters a token and 4 a message, as processor.EstimateTokens does
	// without usage). A chain that clears at a trigger below the window's
	// summarizes only what clearing cannot bring under its own.
	TriggerTokens int
	// Keep names tools whose outputs are never cleared.
	Keep []string
	// Recall, when set, makes each placeholder tell the model that the
	// recall tool returns the output (see agent.WithRecall); set it when
	// the agent offers that tool.
	Recall bool
}

// Clearer is the tool-output clearing processor. It has no state besides
// its options: what it returns depends on the history alone, so it is
// safe for concurrent use and gives the same result however the host keeps
// its history (the placeholders it wrote before, found in a history it
// gets back, tell the sizes they replaced).
type Clearer struct {
	keepRounds int
	minSaving  int
	trigger    int
	keep       []string
	recall     bool
}

var _ processor.Processor = (*Clearer)(nil)

// New returns a Clearer with the given options.
func New(opts Options) *Clearer {
	c := &Clearer{keepRounds: opts.KeepRounds, minSaving: opts.MinSaving, trigger: opts.TriggerTokens, keep: slices.Clone(opts.Keep), recall: opts.Recall}
	switch {
	case c.keepRounds == 0:
		c.keepRounds = DefaultKeepRounds
	case c.keepRounds < 1:
		c.keepRounds = 1
	}
	switch {
	case c.minSaving == 0:
		c.minSaving = DefaultMinSaving
	case c.minSaving < 0:
		c.minSaving = 0
	}
	return c
}

// round is a tool round: a response with tool calls, at index call, and the
// requests after it up to the next response.
type round struct {
	call, end int // history[call] is the response; history[call+1:end] its requests
	saving    int // characters clearing its outputs would save
}

// Process returns history with the outputs of its old tool rounds replaced
// by placeholders, as the package documentation describes, or history
// itself when nothing is cleared. The rounds cleared are those of the
// latest clear a host sending this history request by request would have
// made: scanning the rounds in order, whenever the rounds that have become
// clearable since the last clear (those with KeepRounds rounds after them)
// would save MinSaving characters or more, they are cleared. The last
// request is never changed. It does not wait and does not look at ctx; an
// empty history is an error (processor.ErrEmptyHistory).
func (c *Clearer) Process(_ context.Context, history []processor.Message) ([]processor.Message, error) {
	if len(history) == 0 {
		return nil, processor.ErrEmptyHistory
	}
	rounds := c.rounds(history)
	// rounds[:cleared] are cleared: at first those cleared before (a
	// stored history whose older rounds a window compacted starts with
	// them), then as a host sending the history request by request would
	// have seen them cleared.
	cleared := 0
	for cleared < len(rounds) && c.done(history, rounds[cleared]) {
		cleared++
	}
	// With a trigger: the tokens of the history up to each round's end,
	// less what the rounds cleared so far save.
	var chars []int // chars[i]: characters of history[:i]
	savedBefore := 0
	if c.trigger > 0 {
		chars = make([]int, len(history)+1)
		for i, m := range history {
			chars[i+1] = chars[i] + processor.Chars(m)
		}
		for _, rd := range rounds[:cleared] {
			savedBefore += rd.saving
		}
	}
	for r := range rounds {
		clearable := r + 1 - c.keepRounds
		if clearable <= cleared {
			continue
		}
		saving := 0
		for _, rd := range rounds[cleared:clearable] {
			saving += rd.saving
		}
		if saving <= 0 {
			continue
		}
		if c.trigger > 0 {
			end := rounds[r].end
			if (chars[end]-savedBefore)/processor.CharsPerToken+end*processor.MessageOverheadTokens <= c.trigger {
				continue
			}
			savedBefore += saving
		} else if saving < c.minSaving {
			continue
		}
		cleared = clearable
	}
	edit := processor.EditHistory(history)
	for _, rd := range rounds[:cleared] {
		for i := rd.call + 1; i < rd.end; i++ {
			if m, changed := processor.MapParts(history[i], c.clear); changed {
				edit.Set(i, m)
			}
		}
	}
	return edit.History(), nil
}

// clear returns the placeholder for p, a tool output to clear, and false
// for any other part.
func (c *Clearer) clear(p processor.Part) (processor.Part, bool) {
	r, ok := p.(processor.ToolReturn)
	if !ok || c.kept(r) {
		return nil, false
	}
	return summary.Clear(r, c.recall)
}

// rounds returns the tool rounds of history before its last message, with
// what clearing each would save.
func (c *Clearer) rounds(history []processor.Message) []round {
	var rounds []round
	last := len(history) - 1
	for i := 0; i < last; i++ {
		if !history[i].HasToolCalls() {
			continue
		}
		rd := round{call: i, end: i + 1}
		for rd.end < last && history[rd.end].Kind == processor.Request {
			for _, p := range history[rd.end].Parts {
				if r, ok := p.(processor.ToolReturn); ok && !c.kept(r) {
					rd.saving += summary.Saving(r, c.recall)
				}
			}
			rd.end++
		}
		if rd.end == last && history[last].Kind == processor.Request {
			// Its returns (some, at least) are in the last request: the
			// round is the newest, and the last request is kept.
			rounds = append(rounds, round{call: i, end: i + 1})
			continue
		}
		rounds = append(rounds, rd)
		i = rd.end - 1
	}
	return rounds
}

// done reports whether the outputs of rd are cleared: it has a
// placeholder, and no output left to clear.
func (c *Clearer) done(history []processor.Message, rd round) bool {
	placeholders := 0
	for i := rd.call + 1; i < rd.end; i++ {
		for _, p := range history[i].Parts {
			r, ok := p.(processor.ToolReturn)
			if !ok {
				continue
			}
			if _, isPlaceholder := summary.ParsePlaceholder(r); isPlaceholder {
				placeholders++
			} else if !c.kept(r) && summary.Saving(r, c.recall) > 0 {
				return false
			}
		}
	}
	return placeholders > 0
}

// kept reports whether r is the output of a tool never cleared.
func (c *Clearer) kept(r processor.ToolReturn) bool {
	return slices.Contains(c.keep, r.ToolName)
}
