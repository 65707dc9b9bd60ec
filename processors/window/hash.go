package window

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"

	"github.com/abridge-go/abridge/processor"
)

// hasher feeds the content of messages to a SHA-256; with cheap set, only
// the length and the first and last keyChars bytes of each string (see
// [Key]). The digests and keys in users' stores were made of what it
// feeds: it must not change.
type hasher struct {
	h     hash.Hash
	cheap bool
	tmp   [binary.MaxVarintLen64]byte
}

// keyChars is how much of each end of a string a cheap hash reads.
const keyChars = 32

func newHasher() *hasher { return &hasher{h: sha256.New()} }

func (h *hasher) num(v int) {
	n := binary.PutUvarint(h.tmp[:], uint64(v))
	h.h.Write(h.tmp[:n])
}

// text feeds a string: its length, then its bytes.
func (h *hasher) text(s string) {
	h.num(len(s))
	if h.cheap && len(s) > 2*keyChars {
		io.WriteString(h.h, s[:keyChars])
		io.WriteString(h.h, s[len(s)-keyChars:])
		return
	}
	io.WriteString(h.h, s)
}

// Part tags, fed before each part's fields.
const (
	tagSystem = iota + 1
	tagUser
	tagToolReturn
	tagRetry
	tagText
	tagToolCall
	tagThinking
	tagOther
	tagOpaque
)

// message feeds the content of m: its kind, the participant name and
// refusal of its metadata, and every field of its parts a provider sees,
// but a tool return's tool name, which OpenAI's wire format does not
// carry. Two messages have the same content, for the window, when they
// feed the same.
func (h *hasher) message(m *processor.Message) {
	h.num(int(m.Kind))
	h.num(len(m.Parts))
	var name, refusal string
	if m.Meta != nil {
		name, refusal = m.Meta.Name, m.Meta.Refusal
	}
	h.text(name)
	h.text(refusal)
	for _, p := range m.Parts {
		switch p := p.(type) {
		case processor.SystemPrompt:
			h.num(tagSystem)
			developer := 0
			if p.Developer {
				developer = 1
			}
			h.num(developer)
			h.text(p.Name)
			h.text(p.Content)
		case processor.UserPrompt:
			h.num(tagUser)
			h.text(p.Name)
			h.text(p.Content)
			if p.Contents == nil {
				h.num(0)
				continue
			}
			h.num(1 + len(p.Contents))
			for _, c := range p.Contents {
				h.text(c.Type)
				h.text(c.Text)
				h.text(string(c.Data))
			}
		case processor.ToolReturn:
			h.num(tagToolReturn)
			h.text(p.ToolCallID)
			switch {
			case p.JSON != nil:
				h.num(1)
				h.text(string(p.JSON))
			case p.Contents != nil:
				h.num(2 + len(p.Contents))
				for _, c := range p.Contents {
					h.text(c)
				}
			default:
				h.num(0)
				h.text(p.Content)
			}
		case processor.RetryPrompt:
			h.num(tagRetry)
			h.text(p.ToolCallID)
			h.text(p.ToolName)
			h.text(p.Content)
		case processor.Text:
			h.num(tagText)
			h.text(p.Content)
		case processor.ToolCall:
			h.num(tagToolCall)
			h.text(p.ToolCallID)
			h.text(p.ToolName)
			h.text(p.Args)
		case processor.Thinking:
			h.num(tagThinking)
			h.text(p.Content)
			h.text(p.Signature)
			if p.API != "" || p.Raw != "" {
				// Thinking held whole.
				h.text(p.API)
				h.text(p.Raw)
			}
		case processor.Opaque:
			h.num(tagOpaque)
			h.text(p.API)
			h.text(p.Type)
			h.text(p.Raw)
		default:
			h.num(tagOther)
		}
	}
}

// digestOf returns the content digest of msgs.
func digestOf(msgs []processor.Message) Digest {
	h := newHasher()
	for i := range msgs {
		h.message(&msgs[i])
	}
	return Digest(h.h.Sum(nil))
}

// keyOf returns the key of messages in the conversation scope ("" for
// none): the first 16 bytes of the hash of the scope, then, cheaply, the
// messages' count and each of them.
func keyOf(scope string, ms []processor.Message) Key {
	h := newHasher()
	h.text(scope)
	h.cheap = true
	h.num(len(ms))
	for i := range ms {
		h.message(&ms[i])
	}
	return Key(h.h.Sum(nil)[:len(Key{})])
}

// lasts returns the keys of history[from:len(history)-1] one by one: the
// messages a span after a head ending at from may end with (a span never
// takes the last message).
func lasts(history []processor.Message, from int) []Key {
	var out []Key
	for i := from; i < len(history)-1; i++ {
		out = append(out, keyOf("", history[i:i+1]))
	}
	return out
}
