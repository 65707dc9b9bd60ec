package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

const body = `{"model":"gpt-x", "temperature":0.2,"messages" : [
 {"role":"system","content":"Be brief."},
 {"role":"user","content":"List the files."},
 {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},
 {"role":"tool","tool_call_id":"c1","content":"a.go\nb.go"}
], "tools":[{"type":"function","function":{"name":"ls","parameters":{"type":"object"}}}], "stream": true, "x_unknown": {"keep":"me"}}`

// with returns the body b written with out in place of its messages
// (Buffers, joined).
func with(b *Body, out []processor.Message) ([]byte, error) {
	bufs, err := b.Buffers(out)
	return bytes.Join(bufs, nil), err
}

func TestParse(t *testing.T) {
	b, err := Chat.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want, err := model.FromJSON([]byte(body[strings.Index(body, "[") : strings.Index(body, `], "tools"`)+1]))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, b.Messages, cmp.Comparer(processor.Equal)); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if b.Model != "gpt-x" || !b.Stream {
		t.Errorf("model %q stream %v", b.Model, b.Stream)
	}
	// The same messages back: the same body, byte for byte.
	same, err := with(b, b.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if string(same) != body {
		t.Errorf("unchanged messages changed the body:\n%s", same)
	}
	// Fewer, one new: everything but the messages kept.
	out := []processor.Message{b.Messages[0], processor.UserMessage("New."), b.Messages[2], b.Messages[3]}
	got, err := with(b, out)
	if err != nil {
		t.Fatal(err)
	}
	wantBody := strings.Replace(body, `{"role":"user","content":"List the files."}`, `{"role":"user","content":"New."}`, 1)
	wantBody = strings.NewReplacer("[\n ", "[", ",\n ", ",", "\n]", "]").Replace(wantBody)
	if string(got) != wantBody {
		t.Errorf("body with a new message:\n got %s\nwant %s", got, wantBody)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		body string
		want error
	}{
		{``, ErrNotJSON},
		{`[]`, ErrNotJSON},
		{`{"model":"x"`, ErrNotJSON},
		{`{"model":"x"} {}`, ErrNotJSON},
		{`{"messages":[{"role":"user","content":"x"}]}}`, ErrNotJSON},
		{`{"messages":[{"role":"user","content":"x"}]}]`, ErrNotJSON},
		{`{"messages":[{"role":"user","content":"x"}]} x`, ErrNotJSON},
		{"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}\x00", ErrNotJSON},
		{`{"model":"x"}`, ErrNoMessages},
		{`{"messages":[]}`, ErrNoMessages},
		{`{"messages":{}}`, ErrNoMessages},
		{`{"messages":[{"role":"tool","content":"x"}]}`, ErrBadMessage},
		{`{"messages":[{"content":"x"}]}`, ErrBadMessage},
	} {
		if _, err := Chat.Parse([]byte(tc.body)); !errors.Is(err, tc.want) {
			t.Errorf("Parse(%q) error %v, want %v", tc.body, err, tc.want)
		}
	}
	// An empty array says it is empty, not missing.
	if _, err := Chat.Parse([]byte(`{"messages": []}`)); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf(`Parse of "messages": [] error %v, want one saying it is empty`, err)
	}
}

// TestHeaderFields reads "model" and "stream" of bodies whose values are
// written in the ways JSON allows, through each codec: each reads as
// encoding/json reads it (a "stream" that is not a boolean is false).
func TestHeaderFields(t *testing.T) {
	models := []string{`"gpt-5"`, `"gpt\u002d5"`, `"mod\"el\\"`, `"caf\u00e9 \ud83d\ude00"`, `"tab\tin"`, `""`, `7`, `null`}
	streams := []string{`true`, `false`, `null`, `"true"`, `1`, ` true`}
	bodies := map[Codec]func(model, stream string) string{
		Chat: func(model, stream string) string {
			return `{"model":` + model + `,"stream":` + stream + `,"messages":[{"role":"user","content":"hi"}]}`
		},
		Responses: func(model, stream string) string {
			return `{"model":` + model + `,"stream":` + stream + `,"input":[{"role":"user","content":"hi"}]}`
		},
		Messages: func(model, stream string) string {
			return `{"model":` + model + `,"stream":` + stream + `,"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
		},
	}
	type header struct {
		Model  string
		Stream bool
	}
	for c, body := range bodies {
		for _, model := range models {
			for _, stream := range streams {
				var want header
				_ = json.Unmarshal([]byte(model), &want.Model)
				_ = json.Unmarshal([]byte(stream), &want.Stream)
				b, err := c.Parse([]byte(body(model, stream)))
				if err != nil {
					t.Fatalf("%s, model %s, stream %s: %v", c.API(), model, stream, err)
				}
				if diff := cmp.Diff(want, header{b.Model, b.Stream}); diff != "" {
					t.Errorf("%s, model %s, stream %s (-encoding/json +read):\n%s", c.API(), model, stream, diff)
				}
			}
		}
	}
}

// TestMeasure counts the tokens of bodies, and refuses what Parse refuses
// as not JSON.
func TestMeasure(t *testing.T) {
	for _, tc := range []struct {
		body   string
		tokens int // -1: refused
	}{
		{`{}`, 1},
		{` {"a":1} `, 3},
		{`{"messages":[{"role":"user","content":"a"}],"stream":true,"n":null}`, 12},
		{`{"a":[[],{},"x",-1.5e3,false]}`, 8},
		{`[]`, -1},
		{`"x"`, -1},
		{``, -1},
		{`{"a":1`, -1},
		{`{"a":1}}`, -1},
		{`{"a":1} {}`, -1},
		{`{"a":1,"a":2}`, -1},
		{"{\"a\":\"\xff\"}", -1},
	} {
		got, err := Measure([]byte(tc.body))
		switch {
		case tc.tokens < 0 && !errors.Is(err, ErrNotJSON):
			t.Errorf("Measure(%q) = %d, %v; want ErrNotJSON", tc.body, got, err)
		case tc.tokens >= 0 && (err != nil || got != tc.tokens):
			t.Errorf("Measure(%q) = %d, %v; want %d", tc.body, got, err, tc.tokens)
		}
		if _, perr := Chat.Parse([]byte(tc.body)); errors.Is(perr, ErrNotJSON) != (tc.tokens < 0) {
			t.Errorf("Parse(%q): %v, but Measure: %v", tc.body, perr, err)
		}
	}
}
