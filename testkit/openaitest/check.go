package openaitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// SplitBody returns the raw value of a JSON object's "messages" member and
// the object with that value taken out (the bytes before it followed by the
// bytes after it), so that two bodies can be compared byte for byte outside
// their messages.
func SplitBody(body []byte) (messages, rest []byte, err error) {
	return SplitField(body, "messages")
}

// SplitField is SplitBody for the member named key: a Responses body's
// history is its "input".
func SplitField(body []byte, key string) (value, rest []byte, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("body is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("read key: %w", err)
		}
		from := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("read value of %v: %w", t, err)
		}
		if t != key {
			continue
		}
		to := dec.InputOffset()
		// from stands before the colon: skip to the value.
		at := int(from) + bytes.IndexByte(body[from:to], ':') + 1
		for body[at] == ' ' || body[at] == '\n' || body[at] == '\t' || body[at] == '\r' {
			at++
		}
		rest = append(append([]byte{}, body[:at]...), body[to:]...)
		return body[at:to], rest, nil
	}
	return nil, nil, fmt.Errorf("body has no %q", key)
}

// Forwarded describes a request as the upstream received it, against the
// one the client sent.
type Forwarded struct {
	// Compacted is set when the messages were compacted: a head, one
	// marker and a tail.
	Compacted bool
	// Sent and Got are the numbers of messages sent by the client and
	// received upstream.
	Sent, Got int
	// Head and Tail are the numbers of messages kept before and after the
	// marker.
	Head, Tail int
	// Summary is the marker's summary.
	Summary string
}

// CheckForwarded compares got, a body the upstream received, with sent,
// the body the client sent: every byte outside "messages" must be the
// same; the messages must be a valid history, and either the client's
// (after trim, when not nil: the trimmer of the chain) or the client's
// head, exactly one abridge summary marker (summary.ParseMarker) and the
// client's tail.
func CheckForwarded(sent, got []byte, trim processor.Processor) (Forwarded, error) {
	return CheckForwardedAPI(wire.Chat, sent, got, trim)
}

// CheckForwardedAPI is CheckForwarded for a request of codec's API, whose
// history is its "messages" or, for the Responses API, its "input"; the
// upstream's history must also be one codec accepts. A marker the codec
// wrote into one message with the requests beside it counts as a message
// of its own.
func CheckForwardedAPI(codec wire.Codec, sent, got []byte, trim processor.Processor) (Forwarded, error) {
	key := "messages"
	if codec.API() == "responses" {
		key = "input"
	}
	_, sentRest, err := SplitField(sent, key)
	if err != nil {
		return Forwarded{}, fmt.Errorf("client's body: %w", err)
	}
	_, gotRest, err := SplitField(got, key)
	if err != nil {
		return Forwarded{}, fmt.Errorf("upstream's body: %w", err)
	}
	if !bytes.Equal(sentRest, gotRest) {
		i := 0
		for i < len(sentRest) && i < len(gotRest) && sentRest[i] == gotRest[i] {
			i++
		}
		return Forwarded{}, fmt.Errorf("body outside %s differs at byte %d: client %q, upstream %q",
			key, i, around(sentRest, i), around(gotRest, i))
	}
	sb, err := codec.Parse(sent, nil)
	if err != nil {
		return Forwarded{}, fmt.Errorf("client's body: %w", err)
	}
	gb, err := codec.Parse(got, nil)
	if err != nil {
		return Forwarded{}, fmt.Errorf("upstream's body: %w", err)
	}
	if err := codec.Validate(sb.Messages, gb.Messages); err != nil {
		return Forwarded{}, fmt.Errorf("upstream's %s is not a history the API accepts: %w", key, err)
	}
	want, gotMsgs := sb.Messages, gb.Messages
	if trim != nil {
		if want, err = trim.Process(context.Background(), want); err != nil {
			return Forwarded{}, fmt.Errorf("trim the client's messages: %w", err)
		}
	}
	if err := processor.Validate(gotMsgs); err != nil {
		return Forwarded{Sent: len(want), Got: len(gotMsgs)}, fmt.Errorf("upstream's messages are not a valid history: %w", err)
	}
	gotMsgs = splitMarkers(gotMsgs)
	f := Forwarded{Sent: len(want), Got: len(gotMsgs)}
	marker := -1
	for i, m := range gotMsgs {
		if s, _, ok := summary.ParseMarker(m); ok {
			if marker >= 0 {
				return f, fmt.Errorf("two summary markers, at %d and %d", marker, i)
			}
			marker, f.Summary = i, s
		}
	}
	if marker < 0 {
		if len(gotMsgs) != len(want) {
			return f, fmt.Errorf("no summary marker, and %d messages instead of %d", len(gotMsgs), len(want))
		}
		for i := range want {
			if !processor.Equal(want[i], gotMsgs[i]) {
				return f, fmt.Errorf("message %d differs from the client's", i)
			}
		}
		return f, nil
	}
	f.Compacted, f.Head, f.Tail = true, marker, len(gotMsgs)-marker-1
	if f.Head+f.Tail >= len(want) {
		return f, fmt.Errorf("marker at %d replaces nothing: %d messages kept of %d", marker, f.Head+f.Tail, len(want))
	}
	for i := 0; i < f.Head; i++ {
		if !sameMessage(want[i], gotMsgs[i]) {
			return f, fmt.Errorf("head message %d differs from the client's", i)
		}
	}
	for i := 1; i <= f.Tail; i++ {
		if !sameMessage(want[len(want)-i], gotMsgs[len(gotMsgs)-i]) {
			return f, fmt.Errorf("tail message %d from the end differs from the client's", i)
		}
	}
	return f, nil
}

// splitMarkers returns msgs with each request that holds a summary
// marker among other parts or prompt contents (Anthropic Messages sends
// requests in a row as one message) split into what came before it, the
// marker and what came after it, as the window wrote them.
func splitMarkers(msgs []processor.Message) []processor.Message {
	var out []processor.Message
	add := func(m processor.Message, parts ...processor.Part) {
		if len(parts) > 0 {
			out = append(out, processor.Message{Kind: m.Kind, Parts: parts, Meta: m.Meta})
		}
	}
	for _, m := range msgs {
		split := false
		for i, p := range m.Parts {
			u, ok := p.(processor.UserPrompt)
			if m.Kind != processor.Request || !ok || (len(m.Parts) == 1 && len(u.Contents) < 2) {
				continue
			}
			if summary.IsMarker(processor.Message{Kind: m.Kind, Parts: []processor.Part{u}}) {
				add(m, m.Parts[:i]...)
				add(processor.Message{Kind: m.Kind}, u)
				add(m, m.Parts[i+1:]...)
				split = true
				break
			}
			for k, c := range u.Contents {
				marker := processor.UserPrompt{Contents: []processor.UserContent{c}}
				if !summary.IsMarker(processor.Message{Kind: m.Kind, Parts: []processor.Part{marker}}) {
					continue
				}
				before, after := u, u
				before.Contents, after.Contents = u.Contents[:k], u.Contents[k+1:]
				parts := append([]processor.Part{}, m.Parts[:i]...)
				if len(before.Contents) > 0 {
					parts = append(parts, before)
				}
				add(m, parts...)
				add(processor.Message{Kind: m.Kind}, marker)
				parts = nil
				if len(after.Contents) > 0 {
					parts = append(parts, after)
				}
				add(m, append(parts, m.Parts[i+1:]...)...)
				split = true
				break
			}
			if split {
				break
			}
		}
		if !split {
			out = append(out, m)
		}
	}
	return out
}

// sameMessage reports whether got is want as forwarded: equal
// (processor.Equal), or, for a user prompt, the same text as a plain
// prompt or as one text part (a codec may write one as the other when it
// joins requests in a row).
func sameMessage(want, got processor.Message) bool {
	if processor.Equal(want, got) {
		return true
	}
	tw, okw := promptText(want)
	tg, okg := promptText(got)
	return okw && okg && tw == tg
}

// promptText returns the text of a request holding one user prompt of
// plain text or of one text part.
func promptText(m processor.Message) (string, bool) {
	if m.Kind != processor.Request || len(m.Parts) != 1 {
		return "", false
	}
	u, ok := m.Parts[0].(processor.UserPrompt)
	switch {
	case !ok:
		return "", false
	case u.Contents == nil:
		return u.Content, true
	case len(u.Contents) == 1 && u.Contents[0].Type == "text":
		return u.Contents[0].Text, true
	}
	return "", false
}

func around(b []byte, i int) string {
	from, to := max(0, i-20), min(len(b), i+20)
	return string(b[from:to])
}

// LoadConversation returns the first n messages of a transcript (a JSON
// array of Chat Completions messages, or an object with "messages"), each
// as its raw JSON; fewer when the transcript is shorter.
func LoadConversation(path string, n int) ([]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var msgs []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		err = json.Unmarshal(data, &msgs)
	} else {
		var obj struct {
			Messages []json.RawMessage `json:"messages"`
		}
		err = json.Unmarshal(data, &obj)
		msgs = obj.Messages
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(msgs) > n {
		msgs = msgs[:n]
	}
	return msgs, nil
}

// RequestLengths returns the lengths of the requests a client replaying
// msgs sends: one before each assistant message that follows another role
// (the history up to it), and one with every message when the last is not
// an assistant's.
func RequestLengths(msgs []json.RawMessage) []int {
	var out []int
	prev := ""
	for i, m := range msgs {
		var r struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(m, &r)
		if r.Role == "assistant" && i > 0 && prev != "assistant" {
			out = append(out, i)
		}
		if i == len(msgs)-1 && r.Role != "assistant" {
			out = append(out, len(msgs))
		}
		prev = r.Role
	}
	return out
}
