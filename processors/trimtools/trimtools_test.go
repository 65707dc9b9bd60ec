package trimtools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
)

func TestConformance(t *testing.T) {
	for _, opts := range []trimtools.Options{{}, {MaxChars: 100, KeepLast: 1}, {MaxChars: -1}, {KeepLast: -3}} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			processortest.Run(t, func(*testing.T) processor.Processor { return trimtools.New(opts) })
		})
	}
}

func TestNewDefaults(t *testing.T) {
	tests := []struct {
		opts         trimtools.Options
		max, keep    int
		wantDisabled bool
	}{
		{trimtools.Options{}, 2000, 2, false},
		{trimtools.Options{MaxChars: 5000, KeepLast: 6}, 5000, 6, false},
		{trimtools.Options{MaxChars: 10}, trimtools.MinMaxChars, 2, false},
		{trimtools.Options{MaxChars: trimtools.MinMaxChars}, trimtools.MinMaxChars, 2, false},
		{trimtools.Options{MaxChars: -1, KeepLast: -1}, -1, 1, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v", tt.opts), func(t *testing.T) {
			tr := trimtools.New(tt.opts)
			if tr.MaxChars() != tt.max || tr.KeepLast() != tt.keep {
				t.Errorf("MaxChars, KeepLast = %d, %d, want %d, %d", tr.MaxChars(), tr.KeepLast(), tt.max, tt.keep)
			}
		})
	}
}

// note is the note Trim inserts for n removed bytes.
func note(n int) string { return fmt.Sprintf("\n[... %d bytes trimmed by abridge ...]\n", n) }

func TestTrim(t *testing.T) {
	ab := strings.Repeat("a", 150) + strings.Repeat("b", 100)
	// 250 bytes, limit 100: the note for up to 999 bytes is 40 bytes long,
	// leaving 60 characters: 45 of head and 15 of tail.
	tests := []struct {
		name   string
		s      string
		max    int
		want   string
		wantOK bool
	}{
		{"fits", "short", 100, "", false},
		{"exact limit", strings.Repeat("x", 100), 100, "", false},
		{"one over", strings.Repeat("x", 101), 100, strings.Repeat("x", 45) + note(41) + strings.Repeat("x", 15), true},
		{"head and tail", ab, 100, strings.Repeat("a", 45) + note(190) + strings.Repeat("b", 15), true},
		// A head of 48 characters ends the eight-at-a-time ASCII scan exactly.
		{"head multiple of eight", ab, 104, strings.Repeat("a", 48) + note(186) + strings.Repeat("b", 16), true},
		{"limit raised to minimum", ab, 7, strings.Repeat("a", 45) + note(190) + strings.Repeat("b", 15), true},
		// 100 three-byte runes are 300 bytes but fit a 100-character cap.
		{"multibyte fits", strings.Repeat("語", 100), 100, "", false},
		// Over by characters: the result is cut to 100 bytes, at rune boundaries.
		{"multibyte over", strings.Repeat("語", 101), 100, strings.Repeat("語", 15) + note(243) + strings.Repeat("語", 5), true},
		// Four-byte emoji: cutting by bytes would split them.
		{"emoji", strings.Repeat("😀", 120), 100, strings.Repeat("😀", 11) + note(424) + strings.Repeat("😀", 3), true},
		// Invalid bytes count as one character each and are kept as they are.
		{"invalid utf8", strings.Repeat("\xff", 101), 100, strings.Repeat("\xff", 45) + note(41) + strings.Repeat("\xff", 15), true},
		// 50 runes and 60 stray continuation bytes: 110 characters in 210
		// bytes, although only 50 bytes start a valid rune.
		{"stray continuation bytes", strings.Repeat("語", 50) + strings.Repeat("\x80", 60), 100, strings.Repeat("語", 15) + note(150) + strings.Repeat("\x80", 15), true},
		{"stray continuation bytes fit", strings.Repeat("語", 50) + strings.Repeat("\x80", 50), 100, "", false},
	}
	// Forty 15-byte lines, limit 200: 160 bytes besides the note, cut at
	// the line ends nearest to 120 bytes of head and 40 of tail.
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("%03d abcdefghij", i))
	}
	text := strings.Join(lines, "\n") + "\n"
	tests = append(tests, struct {
		name   string
		s      string
		max    int
		want   string
		wantOK bool
	}{"whole lines", text, 200, strings.Join(lines[:8], "\n") + note(451) + strings.Join(lines[38:], "\n") + "\n", true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := trimtools.Trim(tt.s, tt.max)
			if ok != tt.wantOK {
				t.Fatalf("Trim ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Trim (-want +got):\n%s", diff)
			}
			if ok && len(got) > max(tt.max, trimtools.MinMaxChars) {
				t.Errorf("result has %d bytes, more than the limit", len(got))
			}
		})
	}
}

// TestTrimMixedBoundaries trims contents mixing one- to four-byte runes at
// every offset and checks that no rune is split and the result fits.
// TestIsTrimmed tells what Trim returned from what it did not touch.
func TestIsTrimmed(t *testing.T) {
	trimmed, ok := trimtools.Trim(strings.Repeat("line\n", 1000), 200)
	if !ok {
		t.Fatal("Trim left 5000 characters under a cap of 200")
	}
	tests := []struct {
		s    string
		want bool
	}{
		{trimmed, true},
		{"prefix " + trimmed, true},
		{strings.Repeat("line\n", 10), false},
		{"[... 12 bytes trimmed by someone else ...]", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := trimtools.IsTrimmed(tt.s); got != tt.want {
			t.Errorf("IsTrimmed(%.40q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestTrimMixedBoundaries(t *testing.T) {
	alphabet := []string{"a", "é", "語", "😀"}
	for shift := range 8 {
		var b strings.Builder
		for i := range 400 {
			b.WriteString(alphabet[(i*i+shift)%len(alphabet)])
		}
		s := b.String()
		for _, limit := range []int{100, 101, 150, 333, 399, 400} {
			got, ok := trimtools.Trim(s, limit)
			if ok != (limit < 400) {
				t.Fatalf("shift %d limit %d: ok = %v", shift, limit, ok)
			}
			if !ok {
				continue
			}
			if !utf8.ValidString(got) {
				t.Errorf("shift %d limit %d: a rune was split", shift, limit)
			}
			if len(got) > limit {
				t.Errorf("shift %d limit %d: %d bytes", shift, limit, len(got))
			}
			head, rest, _ := strings.Cut(got, "\n[... ")
			_, tail, _ := strings.Cut(rest, " ...]\n")
			if !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) {
				t.Errorf("shift %d limit %d: head or tail is not from the content", shift, limit)
			}
			removed := len(s) - len(head) - len(tail)
			if !strings.Contains(got, note(removed)) {
				t.Errorf("shift %d limit %d: note does not say %d bytes", shift, limit, removed)
			}
			if again, ok := trimtools.Trim(got, limit); ok {
				t.Errorf("shift %d limit %d: trimmed content trimmed again to %q", shift, limit, again)
			}
		}
	}
}

func call(id string) processor.Message {
	return processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: "{}"})
}

func ret(id, content string) processor.ToolReturn {
	return processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: content}
}

func trimmed(id, content string) processor.ToolReturn {
	s, ok := trimtools.Trim(content, trimtools.DefaultMaxChars)
	if !ok {
		panic("content fits")
	}
	return processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: s}
}

func TestProcess(t *testing.T) {
	long := strings.Repeat("0123456789", 300) // 3000 bytes
	exact := strings.Repeat("x", trimtools.DefaultMaxChars)
	bigJSON, _ := json.Marshal(map[string]string{"data": long})
	unicodeFits := strings.Repeat("é", trimtools.DefaultMaxChars) // 4000 bytes, 2000 characters
	user := processor.UserMessage("go on")
	tests := []struct {
		name string
		opts trimtools.Options
		in   []processor.Message
		want []processor.Message // nil: want the input itself
	}{
		{
			name: "long return trimmed",
			in:   []processor.Message{user, call("1"), processor.NewRequest(ret("1", long)), processor.TextMessage("done"), user},
			want: []processor.Message{user, call("1"), processor.NewRequest(trimmed("1", long)), processor.TextMessage("done"), user},
		},
		{
			name: "short and exact-limit returns kept",
			in:   []processor.Message{user, call("1"), processor.NewRequest(ret("1", "ok")), call("2"), processor.NewRequest(ret("2", exact)), processor.TextMessage("done"), user},
		},
		{
			name: "multibyte within the character limit kept",
			in:   []processor.Message{user, call("1"), processor.NewRequest(ret("1", unicodeFits)), processor.TextMessage("done"), user},
		},
		{
			name: "disabled",
			opts: trimtools.Options{MaxChars: -1},
			in:   []processor.Message{user, call("1"), processor.NewRequest(ret("1", long)), processor.TextMessage("done"), user},
		},
		{
			name: "last two messages kept by default",
			in:   []processor.Message{user, call("1"), processor.NewRequest(ret("1", long))},
		},
		{
			name: "KeepLast 1 trims the return before the current request",
			opts: trimtools.Options{KeepLast: 1},
			in:   []processor.Message{user, call("1"), processor.NewRequest(ret("1", long)), call("2"), processor.NewRequest(ret("2", long))},
			want: []processor.Message{user, call("1"), processor.NewRequest(trimmed("1", long)), call("2"), processor.NewRequest(ret("2", long))},
		},
		{
			name: "KeepLast longer than the history",
			opts: trimtools.Options{KeepLast: 10},
			in:   []processor.Message{user, call("1"), processor.NewRequest(ret("1", long)), processor.TextMessage("done"), user},
		},
		{
			name: "JSON measured and trimmed as its serialized bytes",
			in: []processor.Message{user, call("1"), processor.NewRequest(processor.ToolReturn{ToolCallID: "1", ToolName: "bash", JSON: bigJSON}),
				call("2"), processor.NewRequest(processor.ToolReturn{ToolCallID: "2", ToolName: "bash", JSON: json.RawMessage(`{"ok":true}`)}), processor.TextMessage("done"), user},
			want: []processor.Message{user, call("1"), processor.NewRequest(trimmed("1", string(bigJSON))),
				call("2"), processor.NewRequest(processor.ToolReturn{ToolCallID: "2", ToolName: "bash", JSON: json.RawMessage(`{"ok":true}`)}), processor.TextMessage("done"), user},
		},
		{
			name: "multi-part measured joined",
			in: []processor.Message{user, call("1"), processor.NewRequest(processor.ToolReturn{ToolCallID: "1", ToolName: "bash", Contents: []string{"head", long, "tail"}}),
				// 999 + 1 + 1000 = exactly the limit once joined.
				call("2"), processor.NewRequest(processor.ToolReturn{ToolCallID: "2", ToolName: "bash", Contents: []string{exact[:999], exact[:1000]}}),
				processor.TextMessage("done"), user},
			want: []processor.Message{user, call("1"), processor.NewRequest(trimmed("1", "head\n"+long+"\ntail")),
				call("2"), processor.NewRequest(processor.ToolReturn{ToolCallID: "2", ToolName: "bash", Contents: []string{exact[:999], exact[:1000]}}),
				processor.TextMessage("done"), user},
		},
		{
			name: "parallel returns trimmed one by one, other parts kept",
			in: []processor.Message{user, processor.NewResponse(processor.ToolCall{ToolCallID: "1", ToolName: "bash"}, processor.ToolCall{ToolCallID: "2", ToolName: "bash"}, processor.ToolCall{ToolCallID: "3", ToolName: "bash"}),
				processor.NewRequest(ret("2", "short"), ret("1", long), processor.RetryPrompt{ToolCallID: "3", ToolName: "bash", Content: long}),
				processor.TextMessage("done"), user},
			want: []processor.Message{user, processor.NewResponse(processor.ToolCall{ToolCallID: "1", ToolName: "bash"}, processor.ToolCall{ToolCallID: "2", ToolName: "bash"}, processor.ToolCall{ToolCallID: "3", ToolName: "bash"}),
				processor.NewRequest(ret("2", "short"), trimmed("1", long), processor.RetryPrompt{ToolCallID: "3", ToolName: "bash", Content: long}),
				processor.TextMessage("done"), user},
		},
		{
			name: "only tool returns are trimmed",
			in:   []processor.Message{processor.SystemMessage(long), processor.UserMessage(long), processor.TextMessage(long), processor.NewRequest(processor.RetryPrompt{Content: long}), processor.TextMessage("done"), user},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := processortest.Clone(tt.in)
			got, err := trimtools.New(tt.opts).Process(context.Background(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = tt.in
				if &got[0] != &tt.in[0] {
					t.Error("nothing trimmed, but the input slice was not returned as is")
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Process (-want +got):\n%s", diff)
			}
			if err := processortest.Diff(before, tt.in); err != nil {
				t.Errorf("input modified: %v", err)
			}
			if err := processor.Validate(got); err != nil {
				t.Errorf("invalid output: %v", err)
			}
			// Trimming is idempotent: the output is its own output.
			again, err := trimtools.New(tt.opts).Process(context.Background(), got)
			if err != nil {
				t.Fatal(err)
			}
			if &again[0] != &got[0] {
				t.Error("processing the output again changed it")
			}
		})
	}
}

func TestProcessEmpty(t *testing.T) {
	_, err := trimtools.New(trimtools.Options{}).Process(context.Background(), nil)
	if !errors.Is(err, processor.ErrEmptyHistory) {
		t.Errorf("error = %v, want ErrEmptyHistory", err)
	}
}
