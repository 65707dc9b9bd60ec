package summarizer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/summary"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// toolExchange is a response calling tool and the request answering it.
func toolExchange(id, tool, args, content string) []processor.Message {
	return []processor.Message{
		processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: tool, Args: args}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: tool, Content: content}),
	}
}

func TestDigest(t *testing.T) {
	d := NewDigest(DigestOptions{})
	got, err := d.Summarize(context.Background(), processortest.CodingSession(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		DigestHeader,
		"Files written: /src/cmd/tool/main.go",
		"Add a --verbose flag to cmd/tool/main.go.",
		"3 calls: Read x1, Edit x1, bash x1",
		"bash: go test ./... 2>&1 | tail",
		"unknown flag",
		"The flag is added; TestFlags fails on an unknown flag.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("digest lacks %q:\n%s", want, got)
		}
	}
	again, _ := d.Summarize(context.Background(), processortest.CodingSession(), "", "")
	if again != got {
		t.Error("digest is not deterministic")
	}
}

func TestDigestBoundAndMerge(t *testing.T) {
	var h []processor.Message
	for i := range 300 {
		id := fmt.Sprint(i)
		h = append(h, processor.UserMessage(fmt.Sprintf("request %d: %s", i, strings.Repeat("w ", 200))))
		h = append(h, toolExchange(id, "Write", fmt.Sprintf(`{"file_path":"out/f%d.go","content":"x"}`, i%40), fmt.Sprintf("Error: disk %d full, see logs/l%d.txt", i, i))...)
	}
	d := NewDigest(DigestOptions{MaxChars: 2000})
	first, _ := d.Summarize(context.Background(), h[:450], "", "")
	written, _ := summary.Paths(h)
	writtenLine := len(writtenLabel) + len(strings.Join(written, ", ")) + 1
	if len(first) > 2000+writtenLine {
		t.Errorf("digest of %d chars, bound 2000 plus the written list %d", len(first), writtenLine)
	}
	// Rolling: the second digest keeps the first one's written files.
	second, _ := d.Summarize(context.Background(), h[450:453], first, "")
	for _, p := range written {
		if !strings.Contains(second, p) {
			t.Errorf("rolled digest lost written path %s", p)
		}
	}
	if !strings.Contains(second, "Earlier summary:") {
		t.Errorf("rolled digest does not keep the previous one:\n%s", second)
	}
	if len(second) > 2000+writtenLine {
		t.Errorf("rolled digest of %d chars", len(second))
	}
}

// TestDigestBoundAnyInput checks the digest's bound on inputs that stress
// it: everything but the header, the count of messages and the files
// written fits in MaxChars, also when those alone reach the bound and when
// the digest is rolled again and again; every file written, including
// those listed by each of several previous digests, is kept; and a
// previous digest's header is not repeated inside the new one.
func TestDigestBoundAnyInput(t *testing.T) {
	ctx := context.Background()
	writes := func(from, n int) []processor.Message {
		var h []processor.Message
		for i := from; i < from+n; i++ {
			id := fmt.Sprint(i)
			h = append(h, toolExchange(id, "Write", fmt.Sprintf(`{"file_path":"internal/some/long/directory/file_%03d.go","content":"x"}`, i), "ok")...)
		}
		return h
	}
	digest := func(h []processor.Message, previous string) string {
		s, _ := NewDigest(DigestOptions{}).Summarize(ctx, h, previous, "")
		return s
	}
	longText := processor.TextMessage(strings.Repeat("the last answer ", 4000))
	many := append(writes(0, 300), longText)
	small := []processor.Message{processor.UserMessage("Carry on."), processor.TextMessage("Done.")}
	for _, tc := range []struct {
		name     string
		max      int
		messages []processor.Message
		previous string
		earlier  []processor.Message // the messages the previous digests cover
		rolls    int                 // times the digest is fed back as the previous one
	}{
		{"written files over the bound", 4000, many, "", nil, 0},
		{"written files over the bound, long previous", 4000, writes(0, 300), strings.Repeat("earlier ", 10_000), nil, 0},
		{"written files over the bound, rolled", 4000, many, "", nil, 4},
		{"previous digest over the bound", 4000, small, digest(many, ""), many, 0},
		{"two previous digests", 4000, small, digest(writes(0, 2), "") + "\n\n" + digest(writes(2, 2), ""), writes(0, 4), 0},
		{"previous digest without files written", 4000, small, digest([]processor.Message{processor.UserMessage("Hi.")}, ""), nil, 0},
		{"tiny bound", 100, many, strings.Repeat("earlier ", 100), nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDigest(DigestOptions{MaxChars: tc.max})
			want := map[string]bool{}
			written, _ := summary.Paths(append(append([]processor.Message(nil), tc.earlier...), tc.messages...))
			for _, p := range written {
				want[p] = true
			}
			got, _ := d.Summarize(ctx, tc.messages, tc.previous, "")
			for range tc.rolls {
				got, _ = d.Summarize(ctx, tc.messages, got, "")
			}
			fixed := len(DigestHeader) + 1 + len(fmt.Sprintf("Messages covered: %d.\n", len(tc.messages)))
			if len(want) > 0 {
				fixed += len(writtenLabel) + 1 + 2*(len(want)-1)
				for p := range want {
					fixed += len(p)
				}
			}
			if len(got) > max(tc.max, fixed) {
				t.Errorf("digest of %d chars, want at most %d (bound %d, header, count and files written %d)", len(got), max(tc.max, fixed), tc.max, fixed)
			}
			var listed []string
			for _, line := range strings.Split(got, "\n") {
				if list, ok := strings.CutPrefix(line, writtenLabel); ok {
					listed = strings.Split(list, ", ")
					break
				}
			}
			if diff := cmp.Diff(slices.Sorted(maps.Keys(want)), slices.Sorted(slices.Values(listed))); diff != "" {
				t.Errorf("files written (-want +got):\n%s", diff)
			}
			if n := strings.Count(got, DigestHeader); n != 1 {
				t.Errorf("digest header %d times, want once:\n%s", n, got)
			}
		})
	}
}

func TestDigestTranscripts(t *testing.T) {
	d := NewDigest(DigestOptions{})
	for _, file := range transcripts.Shipped(t) {
		h, err := transcript.LoadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := d.Summarize(context.Background(), h, "", "")
		written, _ := summary.Paths(h)
		if len(got) > DefaultDigestChars+len(strings.Join(written, ", "))+len("Files written: ")+1 {
			t.Errorf("%s: digest of %d chars", file, len(got))
		}
		for _, p := range written {
			if !strings.Contains(got, p) {
				t.Errorf("%s: written path %s missing", file, p)
			}
		}
	}
}
