package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
)

// The wire kit: the rules every codec keeps, each checked on every body of
// its testdata directory (testdata/API/*.json, the bodies it must take,
// and testdata/API/refused/*.json, bodies its API refuses), and on the
// bodies recorded from real agents (testdata/recorded/AGENT/*.json).

// kitRule is one rule of the kit, checked on one body.
type kitRule struct {
	name  string
	check func(c Codec, data []byte) error
}

var kitRules = []kitRule{
	{"unchanged history gives the body byte for byte", kitUnchanged},
	{"every message written anew reads back the same", kitRoundTrip},
	{"unmodelled items survive edits around them", kitOpaqueSurvive},
	{"a rewrite keeps every key but the value it replaces", kitRewriteKeeps},
}

// recorded names the directories of testdata/recorded holding each API's
// bodies, by the agent that sent them.
var recorded = map[string]string{"responses": "codex", "messages": "claude"}

// kitBodies returns the bodies of the codec's testdata.
func kitBodies(t *testing.T, c Codec, sub string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	dirs := []string{filepath.Join("testdata", c.API(), sub)}
	if agent, ok := recorded[c.API()]; ok {
		dirs = append(dirs, filepath.Join("testdata", "recorded", agent, sub))
	}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = data
		}
	}
	return out
}

// runKit checks every rule of the kit on the codec's bodies.
func runKit(t *testing.T, c Codec) {
	bodies := kitBodies(t, c, "")
	if len(bodies) == 0 {
		t.Fatalf("no testdata bodies for %s", c.API())
	}
	for name, data := range bodies {
		for _, r := range kitRules {
			t.Run(filepath.Base(name)+"/"+r.name, func(t *testing.T) {
				if err := r.check(c, data); err != nil {
					t.Error(err)
				}
			})
		}
	}
	for name, data := range kitBodies(t, c, "refused") {
		t.Run(filepath.Base(name)+"/refused", func(t *testing.T) {
			if err := kitRefused(c, data); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestKit(t *testing.T) {
	for _, c := range []Codec{Chat, Responses, Messages} {
		t.Run(c.API(), func(t *testing.T) { runKit(t, c) })
	}
}

// parseValid parses data and checks its history is valid.
func parseValid(c Codec, data []byte) (*Body, error) {
	b, err := c.Parse(data, nil)
	if err != nil {
		return nil, err
	}
	if err := processor.Validate(b.Messages); err != nil {
		return nil, err
	}
	if err := c.Validate(b.Messages, b.Messages); err != nil {
		return nil, err
	}
	return b, nil
}

func kitUnchanged(c Codec, data []byte) error {
	b, err := parseValid(c, data)
	if err != nil {
		return err
	}
	got, err := with(b, b.Messages)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, data) {
		return errors.New("the body changed:\n" + string(got))
	}
	return nil
}

// rewriteAll returns the body with every message written anew by the
// codec.
func rewriteAll(b *Body) ([]byte, error) {
	fresh := make([]int, 0, len(b.Messages))
	for j := b.lead; j < len(b.Messages); j++ {
		fresh = append(fresh, j)
	}
	raws := make([][]byte, len(b.Messages))
	if err := b.hist.encode(b.Messages, fresh, raws); err != nil {
		return nil, err
	}
	saved := b.raws
	b.raws = make([]json.RawMessage, len(raws)-b.lead)
	for i := range b.raws {
		b.raws[i] = raws[i+b.lead]
	}
	defer func() { b.raws = saved }()
	// A new message in the middle makes With write the pieces.
	out := append([]processor.Message(nil), b.Messages...)
	return with(b, out)
}

func kitRoundTrip(c Codec, data []byte) error {
	b, err := parseValid(c, data)
	if err != nil {
		return err
	}
	again, err := rewriteAll(b)
	if err != nil {
		return err
	}
	back, err := parseValid(c, again)
	if err != nil {
		return errors.New("rewritten body refused: " + err.Error() + "\n" + string(again))
	}
	return processortest.Diff(b.Messages, back.Messages)
}

// kitOpaqueSurvive replaces each user prompt in turn with another and
// checks every opaque part and raw thinking is still in the body, byte
// for byte, and that it reads back as the edited history.
func kitOpaqueSurvive(c Codec, data []byte) error {
	b, err := parseValid(c, data)
	if err != nil {
		return err
	}
	var raws []string
	for _, m := range b.Messages {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case processor.Opaque:
				raws = append(raws, p.Raw)
			case processor.Thinking:
				if p.Raw != "" {
					raws = append(raws, p.Raw)
				}
			}
		}
	}
	for i, m := range b.Messages {
		if len(m.Parts) != 1 {
			continue
		}
		if _, ok := m.Parts[0].(processor.UserPrompt); !ok {
			continue
		}
		out := append([]processor.Message(nil), b.Messages...)
		out[i] = processor.UserMessage("Edited <prompt> & more.")
		got, err := with(b, out)
		if err != nil {
			return err
		}
		for _, r := range raws {
			if !bytes.Contains(got, []byte(r)) {
				return errors.New("lost after editing message " + strconv.Itoa(i) + ": " + r)
			}
		}
		back, err := c.Parse(got, nil)
		if err != nil {
			return err
		}
		if err := processortest.Diff(out, back.Messages); err != nil {
			return errors.New("message " + strconv.Itoa(i) + " edited: " + err.Error())
		}
	}
	return nil
}

func kitRefused(c Codec, data []byte) error {
	if _, err := parseValid(c, data); err == nil {
		return errors.New("accepted a body the API refuses")
	}
	return nil
}

// FuzzCodecs holds every codec to the kit's rules on mutated bodies: a
// body a codec takes is written back unchanged byte for byte, written
// anew it reads back as the same history, and with its tool outputs
// replaced every key the client sent but those outputs comes back
// unchanged (kitRewriteKeeps).
func FuzzCodecs(f *testing.F) {
	for _, c := range []Codec{Chat, Responses, Messages} {
		for _, data := range kitBodies(&testing.T{}, c, "") {
			if len(data) < 32<<10 {
				f.Add(data)
			}
		}
	}
	// Small bodies whose tool outputs carry keys the model does not hold.
	for _, s := range []string{
		`{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"call_id":"c","type":"function_call_output","id":"o","status":"completed"},{"role":"user","content":"x"}]}`,
		`{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}],"is_error":false},{"type":"text","text":"more"}],"x":1}]}`,
		`{"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"content":[{"type":"text","text":"a"}],"role":"tool","tool_call_id":"c","name":"f"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []Codec{Chat, Responses, Messages} {
			if _, err := parseValid(c, data); err != nil {
				continue
			}
			if err := kitUnchanged(c, data); err != nil {
				t.Fatalf("%s: %v", c.API(), err)
			}
			if err := kitRoundTrip(c, data); err != nil {
				t.Fatalf("%s: %v", c.API(), err)
			}
			if err := kitRewriteKeeps(c, data); err != nil {
				t.Fatalf("%s: %v", c.API(), err)
			}
		}
	})
}

// kitRewriteKeeps replaces every tool output of the history (as the
// clearer does) and checks what the client sent is kept around it: in
// each tool output (a Responses *_output item, an Anthropic tool_result
// block, a Chat tool message), found by its call ID, every key but the one
// holding the output ("output", "content") comes back with the value the
// client sent, and no key is added but that one: a tool output sent
// without it gets it, holding the new output (empty when that is empty);
// the message holding a tool_result keeps every key but "content"; every
// field of the body outside the history is kept; and the body reads back
// as the history written (in the shape the API reads it: see normal).
func kitRewriteKeeps(c Codec, data []byte) error {
	b, err := parseValid(c, data)
	if err != nil {
		return err
	}
	out := append([]processor.Message(nil), b.Messages...)
	changed := false
	for i, m := range out {
		if m.Kind != processor.Request {
			continue
		}
		parts := append([]processor.Part(nil), m.Parts...)
		for k, p := range parts {
			if r, ok := p.(processor.ToolReturn); ok {
				parts[k] = processor.ToolReturn{ToolName: r.ToolName, ToolCallID: r.ToolCallID, Content: "[cleared " + r.ToolCallID + "]"}
				changed = true
			}
		}
		out[i].Parts = parts
	}
	if !changed {
		return nil
	}
	got, err := with(b, out)
	if err != nil {
		return err
	}
	back, err := c.Parse(got, nil)
	if err != nil {
		return errors.New("rewritten body refused: " + err.Error() + "\n" + string(got))
	}
	if err := processortest.Diff(normal(b.hist.fit(out)), normal(back.Messages)); err != nil {
		return errors.New("rewritten body reads back otherwise: " + err.Error())
	}
	var before, after map[string]any
	if err := json.Unmarshal(data, &before); err != nil {
		return err
	}
	if err := json.Unmarshal(got, &after); err != nil {
		return errors.New("rewritten body is not JSON: " + err.Error() + "\n" + string(got))
	}
	history := map[string]string{"chat": "messages", "responses": "input", "messages": "messages"}[c.API()]
	lead := map[string]string{"responses": "instructions", "messages": "system"}[c.API()]
	for k, v := range before {
		if k != history && k != lead && !reflect.DeepEqual(v, after[k]) {
			return errors.New("field " + strconv.Quote(k) + " outside the history changed")
		}
	}
	bo, ao := map[string]toolOutput{}, map[string]toolOutput{}
	findOutputs(before[history], nil, bo)
	findOutputs(after[history], nil, ao)
	for id, o := range bo {
		a, ok := ao[id]
		if !ok {
			return errors.New("the output of call " + strconv.Quote(id) + " is gone")
		}
		if err := sameBut(o.obj, a.obj, o.key); err != nil {
			return errors.New("the output of call " + strconv.Quote(id) + ": " + err.Error())
		}
		if o.msg != nil && a.msg != nil {
			if err := sameBut(o.msg, a.msg, "content"); err != nil {
				return errors.New("the message holding the output of call " + strconv.Quote(id) + ": " + err.Error())
			}
		}
	}
	return nil
}

// toolOutput is a tool output found in a decoded history: its object,
// the key holding the output, and the message holding it (nil when it is
// one).
type toolOutput struct {
	obj, msg map[string]any
	key      string
}

// findOutputs records, by call ID, the tool outputs of v (the first of an
// ID), msg the message object v is in.
func findOutputs(v any, msg map[string]any, found map[string]toolOutput) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			findOutputs(e, msg, found)
		}
	case map[string]any:
		typ, _ := v["type"].(string)
		role, _ := v["role"].(string)
		var id, key string
		switch {
		case strings.HasSuffix(typ, "_output"):
			id, _ = v["call_id"].(string)
			key = "output"
		case typ == "tool_result":
			id, _ = v["tool_use_id"].(string)
			key = "content"
		case role == "tool":
			id, _ = v["tool_call_id"].(string)
			key = "content"
		}
		if id != "" {
			if _, seen := found[id]; !seen {
				found[id] = toolOutput{obj: v, msg: msg, key: key}
			}
			return
		}
		if role != "" {
			msg = v
		}
		for _, e := range v {
			findOutputs(e, msg, found)
		}
	}
}

// sameBut reports, as an error, a key of a (the object sent) that b (the
// one written back) lost or holds otherwise, or a key b has that a has
// not, but the key except.
func sameBut(a, b map[string]any, except string) error {
	for k, v := range a {
		if k == except {
			continue
		}
		w, ok := b[k]
		if !ok {
			return errors.New("key " + strconv.Quote(k) + " lost")
		}
		if !reflect.DeepEqual(v, w) {
			return errors.New("key " + strconv.Quote(k) + " changed")
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && k != except {
			return errors.New("key " + strconv.Quote(k) + " added")
		}
	}
	return nil
}
