package wire

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/google/go-cmp/cmp"
)

// TestCacheFollows replays the last request recorded from each agent as
// the requests that led to it (its history's first k items, k growing,
// every other byte as recorded), then each again with one byte changed
// in an item of the middle, all through one cache, as a proxy receives a
// conversation: each body reads as it does without a cache, and is
// written back the same with its last message replaced. The cache
// expects each item to be followed by the one that followed it before; a
// changed item must be read anew, and those after it found again.
func TestCacheFollows(t *testing.T) {
	for _, c := range []Codec{Responses, Messages} {
		t.Run(c.API(), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "recorded", recorded[c.API()], "request_16.json"))
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.Parse(data, nil)
			if err != nil {
				t.Fatal(err)
			}
			items, err := elements(data, span{b.start, b.end})
			if err != nil || len(items) < 8 {
				t.Fatalf("history of %d items: %v", len(items), err)
			}
			body := func(k int, change bool) []byte {
				var out []byte
				out = append(out, data[:b.start]...)
				out = append(out, '[')
				for i, it := range items[:k] {
					if i > 0 {
						out = append(out, ',')
					}
					item := data[it.start:it.end]
					if change && i == k/2 {
						item = changeByte(item)
					}
					out = append(out, item...)
				}
				out = append(out, ']')
				return append(out, data[b.end:]...)
			}
			cache := NewCache(0)
			for k := 1; k <= len(items); k++ {
				for _, change := range []bool{false, true, false} {
					in := body(k, change)
					want, err := c.Parse(in, nil)
					if err != nil {
						continue // a prefix the API refuses (an output without its call)
					}
					got, err := c.Parse(in, cache)
					if err != nil {
						t.Fatalf("%d items (changed %v), through the cache: %v", k, change, err)
					}
					if err := processortest.Diff(want.Messages, got.Messages); err != nil {
						t.Fatalf("%d items (changed %v), through the cache: %v", k, change, err)
					}
					if err := sameDigests(got); err != nil {
						t.Fatalf("%d items (changed %v), through the cache: %v", k, change, err)
					}
					out := append([]processor.Message(nil), want.Messages...)
					out[len(out)-1] = processor.UserMessage("Edited.")
					w, err1 := want.With(out)
					g, err2 := got.With(out)
					if err1 != nil || err2 != nil || !bytes.Equal(w, g) {
						t.Fatalf("%d items (changed %v): written back otherwise through the cache (%v, %v):\n%s\n%s", k, change, err1, err2, g, w)
					}
				}
			}
		})
	}
}

// sameDigests returns an error naming the first message of b whose digest,
// as the body gives it (from the cache's entry where it has one), is not
// the digest of its content, or saying so when the body's count of tokens
// is not its messages'.
func sameDigests(b *Body) error {
	got := make([]uint64, len(b.Messages))
	want := make([]uint64, len(b.Messages))
	for i, m := range b.Messages {
		got[i], want[i] = b.Digest(i), Digest(m)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		return fmt.Errorf("digests (-of the content +of the body):\n%s", diff)
	}
	if got, want := b.Tokens(), processor.ContentTokens(b.Messages); got != want {
		return fmt.Errorf("the body counts %d tokens, its messages %d", got, want)
	}
	return nil
}

// changeByte returns item with a letter of its first "text" string after
// the key's first three letters changed (or item itself when it has none).
func changeByte(item []byte) []byte {
	for _, key := range []string{`"text":"`, `"output":"`, `"content":"`, `"arguments":"`} {
		i := bytes.Index(item, []byte(key))
		if i < 0 {
			continue
		}
		for j := i + len(key) + 3; j < len(item) && item[j] != '"' && item[j] != '\\'; j++ {
			if c := item[j]; c >= 'a' && c <= 'y' {
				out := bytes.Clone(item)
				out[j] = c + 1
				return out
			}
		}
	}
	return item
}

// TestCacheNames reads, through one cache, bodies that share a tool
// output's bytes but whose calls of that ID have different names, in
// turn: each output takes the name of its own body's call, as without a
// cache.
func TestCacheNames(t *testing.T) {
	tests := []struct {
		codec Codec
		body  func(name string) string
	}{
		{Chat, func(name string) string {
			return `{"model":"m","messages":[{"role":"user","content":"go"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"` + name + `","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"call_1","content":"done"}]}`
		}},
		{Responses, func(name string) string {
			return `{"model":"m","input":[{"role":"user","content":"go"},` +
				`{"type":"function_call","call_id":"call_1","name":"` + name + `","arguments":"{}"},` +
				`{"type":"function_call_output","call_id":"call_1","output":"done"}]}`
		}},
		{Messages, func(name string) string {
			return `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"go"},` +
				`{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"` + name + `","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"done"}]}]}`
		}},
	}
	for _, tt := range tests {
		t.Run(tt.codec.API(), func(t *testing.T) {
			cache := NewCache(0)
			for _, name := range []string{"bash", "ls", "bash", "bash", "ls"} {
				data := []byte(tt.body(name))
				want, err := tt.codec.Parse(data, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tt.codec.Parse(data, cache)
				if err != nil {
					t.Fatal(err)
				}
				if err := processortest.Diff(want.Messages, got.Messages); err != nil {
					t.Fatalf("call named %s, through the cache: %v", name, err)
				}
				last := got.Messages[len(got.Messages)-1]
				if r, ok := last.Parts[0].(processor.ToolReturn); !ok || r.ToolName != name {
					t.Fatalf("call named %s: the output reads %#v", name, last.Parts[0])
				}
			}
		})
	}
}

// FuzzCache holds the cache to reading as without it: for each codec, a
// cache that read one of the codec's testdata bodies (so that it expects
// their messages in their order) reads a mutated body, twice, as the codec
// reads it without a cache (the same messages, written back the same
// with the last replaced, or both refused).
func FuzzCache(f *testing.F) {
	seeds := map[Codec][][]byte{}
	for _, c := range []Codec{Chat, Responses, Messages} {
		for _, data := range kitBodies(&testing.T{}, c, "") {
			if len(data) < 32<<10 {
				seeds[c] = append(seeds[c], data)
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []Codec{Chat, Responses, Messages} {
			cache := NewCache(0)
			if s := seeds[c]; len(s) > 0 {
				_, _ = c.Parse(s[len(data)%len(s)], cache)
			}
			want, werr := c.Parse(data, nil)
			for range 2 {
				got, gerr := c.Parse(data, cache)
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("%s: without a cache %v, through it %v", c.API(), werr, gerr)
				}
				if werr != nil {
					break
				}
				if err := processortest.Diff(want.Messages, got.Messages); err != nil {
					t.Fatalf("%s: through the cache: %v", c.API(), err)
				}
				out := append([]processor.Message(nil), want.Messages...)
				out[len(out)-1] = processor.UserMessage("Edited.")
				w, err1 := want.With(out)
				g, err2 := got.With(out)
				if (err1 == nil) != (err2 == nil) || !bytes.Equal(w, g) {
					t.Fatalf("%s: written back otherwise through the cache (%v, %v)", c.API(), err1, err2)
				}
			}
		}
	})
}
