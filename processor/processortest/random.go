package processortest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// Clone returns [processor.Clone](history): a copy that shares no slice
// with history, so that a test can tell whether a processor changed its
// input.
func Clone(history []processor.Message) []processor.Message {
	return processor.Clone(history)
}

// RandomHistory returns a valid random history of about n messages (at
// least one, at most n+4): sometimes a system prompt, user prompts (some
// multi-part), responses with thinking, text and zero to three tool calls,
// the calls answered (in any order, in one or several requests) by tool
// returns with text, JSON or multi-part content or by retry prompts, retry
// prompts asking for another answer, and usage on most responses. Contents
// mix ASCII and multi-byte text (accents, CJK, emoji, right-to-left
// scripts, combining marks); some are longer than 5000 characters. The
// history ends with a request: a user prompt, a retry prompt or the returns
// of a tool-calling step. The same r state gives the same history.
func RandomHistory(r *rand.Rand, n int) []processor.Message {
	g := &gen{r: r}
	var h []processor.Message
	user := g.userPrompt()
	switch {
	case n > 1 && r.IntN(3) == 0:
		h = append(h, processor.SystemMessage(g.text(20, 400)), processor.NewRequest(user))
	case r.IntN(2) == 0:
		h = append(h, processor.NewRequest(processor.SystemPrompt{Content: g.text(20, 400)}, user))
	default:
		h = append(h, processor.NewRequest(user))
	}
	for len(h) < n {
		resp := g.response(len(h))
		h = append(h, resp)
		calls := resp.ToolCalls()
		if len(calls) == 0 {
			if r.IntN(8) == 0 {
				h = append(h, processor.NewRequest(processor.RetryPrompt{Content: "Please answer in the requested format. " + g.text(5, 80)}))
			} else {
				h = append(h, processor.NewRequest(g.userPrompt()))
			}
			continue
		}
		answers := make([]processor.Part, len(calls))
		for i, c := range calls {
			answers[i] = g.answer(c)
		}
		r.Shuffle(len(answers), func(i, j int) { answers[i], answers[j] = answers[j], answers[i] })
		for len(answers) > 0 {
			k := 1 + r.IntN(len(answers))
			h = append(h, processor.NewRequest(answers[:k]...))
			answers = answers[k:]
		}
	}
	return h
}

type gen struct {
	r     *rand.Rand
	calls int
}

var words = []string{
	"the", "a", "file", "test", "go", "build", "error", "func", "return", "nil", "context",
	"history", "message", "tool", "call", "result", "ok", "line", "42", "0x1f", "{", "}", "();",
	"café", "naïve", "déjà-vu", "Ωμέγα", "Привет", "日本語", "中文字符", "한국어", "עברית", "العربية",
	"😀", "👩‍💻", "🇫🇷", "e\u0301", "∑∫√", "\t", "—", "“quoted”",
}

// text returns random words, between lo and hi bytes long (about).
func (g *gen) text(lo, hi int) string {
	n := lo + g.r.IntN(hi-lo+1)
	var b strings.Builder
	b.Grow(n + 32)
	if n > 1000 {
		// Long outputs repeat a random block of lines, numbered, which is
		// what command output often looks like and much cheaper to build.
		block := g.text(200, 600)
		for k := 1; b.Len() < n; k++ {
			b.WriteString(strconv.Itoa(k))
			b.WriteString(": ")
			b.WriteString(block)
			b.WriteByte('\n')
		}
		return b.String()
	}
	for b.Len() < n {
		if b.Len() > 0 {
			if g.r.IntN(12) == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(words[g.r.IntN(len(words))])
	}
	return b.String()
}

// content returns a text of a random size: mostly short, sometimes a few
// thousand characters, sometimes more than 5000.
func (g *gen) content() string {
	switch g.r.IntN(10) {
	case 0, 1:
		return g.text(5000, 12000)
	case 2, 3:
		return g.text(1500, 4000)
	}
	return g.text(1, 600)
}

func (g *gen) userPrompt() processor.UserPrompt {
	if g.r.IntN(6) != 0 {
		return processor.UserPrompt{Content: g.content()}
	}
	cs := []processor.UserContent{{Type: "text", Text: g.text(5, 300)}}
	if g.r.IntN(2) == 0 {
		cs = append(cs, processor.UserContent{Type: "image_url", Data: json.RawMessage(`{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}`)})
	}
	cs = append(cs, processor.UserContent{Type: "text", Text: g.text(1, 200)})
	return processor.UserPrompt{Contents: cs}
}

var tools = []string{"bash", "read_file", "write_file", "search", "list_dir", "fetch"}

func (g *gen) response(index int) processor.Message {
	var parts []processor.Part
	if g.r.IntN(4) == 0 {
		parts = append(parts, processor.Thinking{Content: g.text(10, 500)})
	}
	ncalls := 0
	switch g.r.IntN(10) {
	case 0, 1, 2:
	case 3, 4, 5, 6:
		ncalls = 1
	case 7, 8:
		ncalls = 2
	default:
		ncalls = 3
	}
	if ncalls == 0 || g.r.IntN(2) == 0 {
		parts = append(parts, processor.Text{Content: g.content()})
	}
	for range ncalls {
		g.calls++
		name := tools[g.r.IntN(len(tools))]
		args, _ := json.Marshal(map[string]string{"command": g.text(1, 120)})
		parts = append(parts, processor.ToolCall{
			ToolCallID: fmt.Sprintf("call_%d_%08x", g.calls, g.r.Uint32()),
			ToolName:   name,
			Args:       string(args),
		})
	}
	meta := processor.Meta{ModelName: "test-model", FinishReason: "stop"}
	if ncalls > 0 {
		meta.FinishReason = "tool_calls"
	}
	if g.r.IntN(4) != 0 {
		meta.Usage = processor.Usage{
			InputTokens:    int64(1000 + 300*index + g.r.IntN(200)),
			OutputTokens:   int64(10 + g.r.IntN(400)),
			PromptMessages: index,
		}
		meta.Usage.CachedInputTokens = meta.Usage.InputTokens / 2
	}
	return processor.NewResponse(parts...).WithMeta(meta)
}

// answer returns a part answering c: mostly a tool return, sometimes a
// retry prompt carrying the call's ID.
func (g *gen) answer(c processor.ToolCall) processor.Part {
	r := processor.ToolReturn{ToolName: c.ToolName, ToolCallID: c.ToolCallID}
	switch g.r.IntN(10) {
	case 0:
		return processor.RetryPrompt{ToolName: c.ToolName, ToolCallID: c.ToolCallID, Content: "tool error: " + g.text(5, 200)}
	case 1, 2:
		items := make([]map[string]any, 1+g.r.IntN(3))
		if g.r.IntN(4) == 0 {
			items = make([]map[string]any, 60+g.r.IntN(60))
		}
		for i := range items {
			items[i] = map[string]any{"id": i, "name": g.text(1, 30), "body": g.text(10, 120), "ok": g.r.IntN(2) == 0}
		}
		r.JSON, _ = json.Marshal(map[string]any{"items": items, "count": len(items)})
	case 3:
		r.Contents = []string{g.text(1, 200), g.content()}
	default:
		r.Content = g.content()
	}
	return r
}
