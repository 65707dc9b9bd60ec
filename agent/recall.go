package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/summary"
)

// RecallToolName is the name of the tool [WithRecall] offers the model.
const RecallToolName = "recall"

// MaxRecallChars bounds what one recall returns; a longer text is cut, and
// says so.
const MaxRecallChars = 40000

// Recaller gives back what compaction took out of a conversation: the
// original output of a tool call, by the call's ID (trimmed or cleared in
// the history since), or the messages a summary replaced, by the
// summary's reference (the "Reference: sum-…" line of its marker, see
// summary.Ref). A *session.Session is one; [NewRecallMemory] is one in
// memory. found is false, with a nil error, when nothing is stored under
// ref.
type Recaller interface {
	Recall(ctx context.Context, ref string) (text string, found bool, err error)
}

// RecallKeeper is a Recaller that the agent feeds as the conversation goes
// (a store that does not see the conversation otherwise, as a session
// does): every message the agent appends or is given, and, for each
// summary marker its processors add, the messages the summary replaced.
type RecallKeeper interface {
	Recaller
	// Keep records messages; a tool output is kept the first time its
	// call ID is seen, so an original is never replaced by a trimmed or
	// cleared copy.
	Keep(ctx context.Context, msgs ...processor.Message) error
	// KeepSummary records the messages the summary with reference ref
	// replaced.
	KeepSummary(ctx context.Context, ref string, replaced []processor.Message) error
}

// WithRecall offers the model the recall tool (see [RecallToolName]): it
// takes a reference, a tool call's ID or a summary's "sum-…" reference,
// and returns what r holds under it, so nothing compaction took out of the
// conversation is lost to the model. A reference r does not hold gets a
// plain answer saying so, as a tool result; a store error goes back as a
// retry prompt: neither ends the turn. When r is a [RecallKeeper], the
// agent feeds it. Set the processors' Recall options too (the window's
// placeholders then tell the model about the tool).
func WithRecall(r Recaller) Option {
	return optionFunc(func(o *options) {
		o.recall = r
		o.tools = append(o.tools, recallTool(r))
	})
}

// recallTool returns the tool WithRecall offers.
func recallTool(r Recaller) Tool {
	return Tool{
		Name: RecallToolName,
		Description: "Returns text that was taken out of this conversation to save context: " +
			"the full output of a tool call that was trimmed or cleared (give the call's id), " +
			"or the messages a summary replaced (give the summary's reference, sum-…).",
		Parameters: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string","description":"a tool call id, or a summary reference (sum-…)"}},"required":["ref"],"additionalProperties":false}`),
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var a struct {
				Ref string `json:"ref"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return "", fmt.Errorf("arguments: %w", err)
			}
			ref := strings.TrimSpace(a.Ref)
			text, found, err := r.Recall(ctx, ref)
			if err != nil {
				return "", fmt.Errorf("recall %q: %w", ref, err)
			}
			if !found {
				return fmt.Sprintf("Nothing is stored under %q: it is not a tool call id or summary reference of this conversation, or it is no longer kept.", ref), nil
			}
			if len(text) > MaxRecallChars {
				text = summary.Clip(text, MaxRecallChars) + "\n(cut to " + strconv.Itoa(MaxRecallChars) + " characters; recall the tool outputs it names one by one for the rest)"
			}
			return text, nil
		},
	}
}

// DefaultRecallBytes bounds a [RecallMemory] made with a size of 0.
const DefaultRecallBytes = 32 << 20

// RecallMemory is a [RecallKeeper] in memory, bounded: when full, it
// forgets what it kept first. It is safe for concurrent use, and belongs
// to one conversation (tool call IDs are unique within one only).
type RecallMemory struct {
	limit int

	mu    sync.Mutex
	items map[string]string // by call ID or summary reference
	order []string          // keys, oldest first
	bytes int
}

var _ RecallKeeper = (*RecallMemory)(nil)

// NewRecallMemory returns a RecallMemory of at most maxBytes bytes (0
// means DefaultRecallBytes).
func NewRecallMemory(maxBytes int) *RecallMemory {
	if maxBytes <= 0 {
		maxBytes = DefaultRecallBytes
	}
	return &RecallMemory{limit: maxBytes, items: map[string]string{}}
}

// Keep records the tool outputs of msgs, each the first time its call ID
// is seen, and not when it is a placeholder or a trimmed copy.
func (r *RecallMemory) Keep(_ context.Context, msgs ...processor.Message) error {
	for _, m := range msgs {
		for _, p := range m.Parts {
			t, ok := p.(processor.ToolReturn)
			if !ok || t.ToolCallID == "" || r.has(t.ToolCallID) {
				continue // kept already: the history passes again every turn
			}
			if _, cleared := summary.ParsePlaceholder(t); cleared {
				continue
			}
			content := t.ToolReturnContent()
			if trimtools.IsTrimmed(content) {
				continue
			}
			r.put(t.ToolCallID, content, false)
		}
	}
	return nil
}

// KeepSummary records the messages the summary with reference ref
// replaced.
func (r *RecallMemory) KeepSummary(_ context.Context, ref string, replaced []processor.Message) error {
	r.put(ref, summary.Lines(replaced), true)
	return nil
}

// has reports whether something is kept under key.
func (r *RecallMemory) has(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.items[key]
	return ok
}

// put keeps text under key (over what is there when replace is set).
func (r *RecallMemory) put(key, text string, replace bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.items[key]; ok {
		if !replace {
			return
		}
		r.bytes -= len(old)
	} else {
		r.order = append(r.order, key)
	}
	r.items[key] = text
	r.bytes += len(text)
	for r.bytes > r.limit && len(r.order) > 1 {
		k := r.order[0]
		r.order = r.order[1:]
		r.bytes -= len(r.items[k])
		delete(r.items, k)
	}
}

// Recall returns what is kept under ref.
func (r *RecallMemory) Recall(_ context.Context, ref string) (string, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	text, ok := r.items[ref]
	return text, ok, nil
}

// keepSummaries tells keeper, for each summary marker of out that in does
// not hold, the messages of in it replaced: those between the head both
// share and the tail out keeps.
func keepSummaries(ctx context.Context, keeper RecallKeeper, in, out []processor.Message) error {
	known := map[string]bool{}
	for _, m := range in {
		if _, ref, ok := summary.ParseMarker(m); ok {
			known[ref] = true
		}
	}
	for h, m := range out {
		_, ref, ok := summary.ParseMarker(m)
		if !ok || known[ref] {
			continue
		}
		end := len(in) - (len(out) - h - 1)
		if end <= h || end > len(in) {
			continue
		}
		if err := keeper.KeepSummary(ctx, ref, in[h:end]); err != nil {
			return err
		}
	}
	return nil
}
