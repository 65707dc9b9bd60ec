package processor_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
)

// FuzzValidateRepair mangles random valid histories (drops, swaps and
// duplicates messages and parts, retargets and invents tool returns) and
// checks that Validate and RepairHistory never panic, that RepairHistory
// leaves its input untouched, changes nothing in a valid history, and
// that its output is valid whenever the input was well formed and ended
// with a request, except when the repair had to drop that last request
// because it held nothing but orphan returns (leaving a history that ends
// with a response, or nothing at all).
func FuzzValidateRepair(f *testing.F) {
	f.Add(uint64(1), uint8(20), []byte{})
	f.Add(uint64(2), uint8(40), []byte{0, 3, 1, 5, 2, 7})
	f.Add(uint64(3), uint8(10), []byte{4, 1, 5, 2, 6, 0, 7, 9})
	f.Add(uint64(4), uint8(60), []byte{3, 200, 3, 100, 1, 4})
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, ops []byte) {
		h := processortest.RandomHistory(rand.New(rand.NewPCG(seed, 99)), int(n%80))
		h = mangle(h, ops)
		before := processortest.Clone(h)
		verr := processor.Validate(h)
		out, fixes := processor.RepairHistory(h)
		if err := processortest.Diff(before, h); err != nil {
			t.Fatalf("input modified: %v", err)
		}
		if len(fixes) == 0 && (len(out) != len(h) || len(h) > 0 && &out[0] != &h[0]) {
			t.Fatal("no fixes, but the input was not returned as is")
		}
		if verr == nil && len(fixes) > 0 {
			t.Fatalf("valid history repaired: %v", fixes)
		}
		if !wellFormed(h) || h[len(h)-1].Kind != processor.Request {
			return
		}
		err := processor.Validate(out)
		if err == nil {
			if _, again := processor.RepairHistory(out); len(again) > 0 {
				t.Fatalf("repairing twice: %v", again)
			}
			return
		}
		last := processor.Fix{Index: len(h) - 1, Action: processor.ActionDroppedRequest}
		dropped := errors.Is(err, processor.ErrNoFinalRequest) || errors.Is(err, processor.ErrEmptyHistory)
		if !dropped || len(fixes) == 0 || fixes[len(fixes)-1] != last {
			t.Fatalf("repaired history is invalid: %v (fixes %v)", err, fixes)
		}
	})
}

// mangle applies the operations ops encodes, two bytes each (operation,
// argument), to a copy of h.
func mangle(h []processor.Message, ops []byte) []processor.Message {
	h = append([]processor.Message(nil), h...)
	for i := 0; i+1 < len(ops) && len(h) > 0; i += 2 {
		k := int(ops[i+1]) % len(h)
		switch ops[i] % 8 {
		case 0: // drop a message
			h = append(h[:k:k], h[k+1:]...)
		case 1: // swap two neighbours
			if k+1 < len(h) {
				h[k], h[k+1] = h[k+1], h[k]
			}
		case 2: // duplicate a message
			h = append(h[:k+1:k+1], h[k:]...)
		case 3: // drop a part
			if m := h[k]; len(m.Parts) > 1 {
				j := int(ops[i+1]) % len(m.Parts)
				m.Parts = append(m.Parts[:j:j], m.Parts[j+1:]...)
				h[k] = m
			}
		case 4: // retarget a tool return
			h[k] = retarget(h[k], "other-"+string(rune('a'+ops[i+1]%26)))
		case 5: // insert an orphan return
			h = append(h[:k:k], append([]processor.Message{processor.NewRequest(processor.ToolReturn{ToolCallID: "orphan", Content: "?"})}, h[k:]...)...)
		case 6: // drop the last message
			if len(h) > 1 {
				h = h[:len(h)-1]
			}
		case 7: // move a user prompt in front of the returns of a request
			m := h[k]
			if m.Kind == processor.Request {
				m.Parts = append([]processor.Part{processor.UserPrompt{Content: "interrupting"}}, m.Parts...)
				h[k] = m
			}
		}
	}
	return h
}

func retarget(m processor.Message, id string) processor.Message {
	for j, p := range m.Parts {
		if r, ok := p.(processor.ToolReturn); ok {
			parts := append([]processor.Part(nil), m.Parts...)
			r.ToolCallID = id
			parts[j] = r
			m.Parts = parts
			return m
		}
	}
	return m
}

// wellFormed reports whether h is free of what RepairHistory does not
// fix: unknown kinds, parts of the wrong kind or nil, requests without
// parts, calls or returns without an ID, and duplicate call IDs in a
// response.
func wellFormed(h []processor.Message) bool {
	if len(h) == 0 {
		return false
	}
	for _, m := range h {
		switch m.Kind {
		case processor.Request:
			if len(m.Parts) == 0 {
				return false
			}
			for _, p := range m.Parts {
				if p == nil || !isRequestPart(p) {
					return false
				}
				if r, ok := p.(processor.ToolReturn); ok && r.ToolCallID == "" {
					return false
				}
			}
		case processor.Response:
			seen := map[string]bool{}
			for _, p := range m.Parts {
				if p == nil || isRequestPart(p) {
					return false
				}
				if c, ok := p.(processor.ToolCall); ok {
					if c.ToolCallID == "" || seen[c.ToolCallID] {
						return false
					}
					seen[c.ToolCallID] = true
				}
			}
		default:
			return false
		}
	}
	return true
}

// isRequestPart reports whether p belongs in a request only (an Opaque
// part belongs in either).
func isRequestPart(p processor.Part) bool {
	switch p.(type) {
	case processor.SystemPrompt, processor.UserPrompt, processor.ToolReturn, processor.RetryPrompt:
		return true
	}
	return false
}
