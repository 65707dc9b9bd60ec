package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/transcript"
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
	b, err := Chat.Parse([]byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := transcript.Load(strings.NewReader(body[strings.Index(body, "[") : strings.Index(body, `], "tools"`)+1]))
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
		if _, err := Chat.Parse([]byte(tc.body), nil); !errors.Is(err, tc.want) {
			t.Errorf("Parse(%q) error %v, want %v", tc.body, err, tc.want)
		}
	}
	// An empty array says it is empty, not missing.
	if _, err := Chat.Parse([]byte(`{"messages": []}`), nil); err == nil || !strings.Contains(err.Error(), "empty") {
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
				b, err := c.Parse([]byte(body(model, stream)), nil)
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

// TestReserve checks what Parse gives its reserve before it decodes: the
// JSON tokens of the history (ends of objects and arrays apart) and one
// for each other field it reads; the reserve's error ends Parse, returned
// as it is; a body that is not JSON is refused before the reserve.
func TestReserve(t *testing.T) {
	errFull := errors.New("full")
	for _, tc := range []struct {
		codec  Codec
		body   string
		tokens int // -1: refused as not JSON
	}{
		{Chat, `{"messages":[{"role":"user","content":"a"}]}`, 6},
		{Chat, ` {"model":"m","messages":[{"role":"user","content":["x",{"a":[1,null]}]}],"stream":true,"n":1} `, 14},
		{Responses, `{"input":"hi","instructions":"be brief"}`, 2},
		{Responses, `{"input":[{"role":"user","content":"a"},{"type":"item_reference","id":"i"}]}`, 11},
		{Messages, `{"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"a"}]}`, 7},
		{Chat, `{"messages":[{"role":"user","content":"a"}],"messages":[]}`, -1},
		{Chat, `{"messages":[{"role":"user","content":"a"}]} {}`, -1},
		{Chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", -1},
	} {
		got := -1
		_, err := tc.codec.Parse([]byte(tc.body), func(tokens int) error {
			got = tokens
			return errFull
		})
		switch {
		case tc.tokens < 0 && (!errors.Is(err, ErrNotJSON) || got != -1):
			t.Errorf("%s %s: reserve saw %d tokens, Parse %v; want ErrNotJSON before the reserve", tc.codec.API(), tc.body, got, err)
		case tc.tokens >= 0 && (err != errFull || got != tc.tokens):
			t.Errorf("%s %s: reserve saw %d tokens, Parse %v; want %d, and the reserve's error", tc.codec.API(), tc.body, got, err, tc.tokens)
		}
	}
}

// TestPlainParts checks which content parts read as plain text (a text
// part with no other key) and which are kept whole, their bytes in Data,
// so that a key abridge does not model goes back with them.
func TestPlainParts(t *testing.T) {
	for _, tc := range []struct {
		codec Codec
		part  string
		plain bool
	}{
		{Responses, `{"type":"input_text","text":"a"}`, true},
		{Responses, `{"text":"a","type":"input_text"}`, true},
		{Responses, `{"type":"input_text","text":"a","x_note":1}`, false},
		{Responses, `{"type":"input_text"}`, false},
		{Responses, `{"type":"input_text","text":5}`, false},
		{Responses, `{"type":"input_image","image_url":"data:x"}`, false},
		{Messages, `{"type":"text","text":"a"}`, true},
		{Messages, `{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}`, false},
		{Messages, `{"type":"image","source":{"type":"base64","data":"x"}}`, false},
	} {
		body := `{"model":"m","input":[{"role":"user","content":[` + tc.part + `]}]}`
		if tc.codec == Messages {
			body = `{"model":"m","messages":[{"role":"user","content":[` + tc.part + `]}]}`
		}
		b, err := tc.codec.Parse([]byte(body), nil)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.codec.API(), tc.part, err)
		}
		c := b.Messages[0].Parts[0].(processor.UserPrompt).Contents[0]
		if plain := c.Data == nil && c.Type == "text"; plain != tc.plain || !plain && string(c.Data) != tc.part {
			t.Errorf("%s %s: read as %+v, want plain %v (else kept whole)", tc.codec.API(), tc.part, c, tc.plain)
		}
	}
}
