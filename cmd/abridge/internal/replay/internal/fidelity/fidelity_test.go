package fidelity

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// golden is a file of figures the peers harness computed (see
// testdata/README.md): per transcript, the token sets of its messages and
// the fidelity figures of replaying it under simple rules.
type golden struct {
	FarMessages int `json:"far_messages"`
	Transcripts []struct {
		File         string `json:"file"`
		Messages     int    `json:"messages"`
		TokenCounts  []int  `json:"token_counts"`
		TokensSHA256 string `json:"tokens_sha256"`
		// Rules holds the figures of every request (one per assistant
		// message) when the rule's history was sent.
		Rules map[string]goldenFigures `json:"rules"`
		// Requests holds them request by request.
		Requests map[string][]struct {
			Reply int `json:"reply"`
			goldenFigures
		} `json:"requests"`
	} `json:"transcripts"`
}

type goldenFigures struct {
	Needed  int64 `json:"needed"`
	Kept    int64 `json:"kept"`
	Far     int64 `json:"far"`
	FarKept int64 `json:"far_kept"`
}

func (g goldenFigures) figures() Figures {
	return Figures(g)
}

// rules are the histories the golden replays sent, from the transcript's
// messages before each assistant message.
var rules = map[string]func([]processor.Message) []processor.Message{
	"raw": func(h []processor.Message) []processor.Message { return h },
	// head2tail10 sends the first 2 messages and the last 10.
	"head2tail10": func(h []processor.Message) []processor.Message {
		if len(h) <= 12 {
			return h
		}
		return append(slices.Clip(h[:2]), h[len(h)-10:]...)
	},
}

func testdataDir(t *testing.T) string {
	t.Helper()
	root, err := transcripts.Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "testdata", "fidelity")
}

func readGolden(t *testing.T, name string) golden {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdataDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if g.FarMessages != FarMessages {
		t.Fatalf("%s was made with far at %d messages, not %d", name, g.FarMessages, FarMessages)
	}
	return g
}

// replayRule counts a request before every assistant message of h, as the
// harness does, sending what rule makes of the messages before it.
func replayRule(h []processor.Message, rule string, each func(reply int, before, after Figures)) Figures {
	c := New(h)
	for i, m := range h {
		if m.Kind != processor.Response {
			continue
		}
		before := c.Figures()
		c.Request(i, rules[rule](h[:i]))
		if each != nil {
			each(i, before, c.Figures())
		}
	}
	return c.Figures()
}

// TestHarnessHandBuilt checks the figures, request by request, against the
// harness's on a hand-built session whose replies reach back both less and
// more than FarMessages messages, to the task, to tool outputs, to the
// system prompt, and to nothing.
func TestHarnessHandBuilt(t *testing.T) {
	g := readGolden(t, "harness-handbuilt.json")
	for _, gt := range g.Transcripts {
		h, err := transcript.LoadFile(filepath.Join(testdataDir(t), gt.File))
		if err != nil {
			t.Fatal(err)
		}
		checkTokens(t, gt.File, h, gt.TokenCounts, gt.TokensSHA256)
		for rule, want := range gt.Rules {
			t.Run(rule, func(t *testing.T) {
				type request struct {
					Reply int
					Figures
				}
				var got, wantEach []request
				for _, r := range gt.Requests[rule] {
					wantEach = append(wantEach, request{r.Reply, r.figures()})
				}
				total := replayRule(h, rule, func(reply int, before, after Figures) {
					got = append(got, request{reply, Figures{
						Needed: after.Needed - before.Needed, Kept: after.Kept - before.Kept,
						Far: after.Far - before.Far, FarKept: after.FarKept - before.FarKept,
					}})
				})
				if diff := cmp.Diff(wantEach, got); diff != "" {
					t.Errorf("requests (-harness +ours):\n%s", diff)
				}
				if diff := cmp.Diff(want.figures(), total); diff != "" {
					t.Errorf("totals (-harness +ours):\n%s", diff)
				}
			})
		}
	}
	// What the session is built to show: far tokens lost while near ones
	// are kept.
	if f := readHandBuiltTotals(t, g, "head2tail10"); f.NeededKeptFar() >= f.NeededKept() || f.FarKept == 0 || f.FarKept == f.Far {
		t.Errorf("head2tail10 keeps %d of %d needed, %d of %d far: the session does not split near from far", f.Kept, f.Needed, f.FarKept, f.Far)
	}
}

func readHandBuiltTotals(t *testing.T, g golden, rule string) Figures {
	t.Helper()
	if len(g.Transcripts) != 1 {
		t.Fatalf("%d hand-built transcripts, want 1", len(g.Transcripts))
	}
	return g.Transcripts[0].Rules[rule].figures()
}

// TestHarnessShared checks the token sets of every message of the shared
// transcripts, and the figures of replaying them under each rule, against
// the harness's.
func TestHarnessShared(t *testing.T) {
	files := transcripts.Shared(t)
	g := readGolden(t, "harness-shared.json")
	byName := map[string]string{}
	for _, f := range files {
		byName[filepath.Base(f)] = f
	}
	if len(g.Transcripts) != len(files) {
		t.Errorf("%d shared transcripts, the golden file has %d", len(files), len(g.Transcripts))
	}
	for _, gt := range g.Transcripts {
		t.Run(gt.File, func(t *testing.T) {
			path, ok := byName[gt.File]
			if !ok {
				t.Skipf("%s is not among the shared transcripts", gt.File)
			}
			h, err := transcript.LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != gt.Messages {
				t.Fatalf("%d messages, the harness read %d", len(h), gt.Messages)
			}
			checkTokens(t, gt.File, h, gt.TokenCounts, gt.TokensSHA256)
			for rule, want := range gt.Rules {
				if diff := cmp.Diff(want.figures(), replayRule(h, rule, nil)); diff != "" {
					t.Errorf("%s (-harness +ours):\n%s", rule, diff)
				}
			}
		})
	}
}

// checkTokens compares the token sets of h's messages (contents and
// arguments together) with the harness's: their sizes, and a SHA-256 of
// each set's sorted tokens joined by newlines, each set followed by a zero
// byte.
func checkTokens(t *testing.T, name string, h []processor.Message, counts []int, sum string) {
	t.Helper()
	c := New(h)
	if len(c.units) != len(counts) {
		t.Fatalf("%s: %d messages as sent, the harness has %d", name, len(c.units), len(counts))
	}
	hash := sha256.New()
	for k, u := range c.units {
		var toks []string
		for _, text := range u.texts {
			toks = AppendTokens(toks, text)
		}
		for _, a := range u.args {
			toks = AppendArgumentTokens(toks, a)
		}
		slices.Sort(toks)
		toks = slices.Compact(toks)
		if len(toks) != counts[k] {
			t.Errorf("%s: message %d has %d tokens, the harness finds %d: %q", name, k, len(toks), counts[k], toks)
		}
		hash.Write([]byte(strings.Join(toks, "\n")))
		hash.Write([]byte{0})
	}
	if got := hex.EncodeToString(hash.Sum(nil)); got != sum {
		t.Errorf("%s: token sets differ from the harness's (SHA-256 %s, want %s)", name, got, sum)
	}
}

// TestCounterMessages checks how the parts of abridge's messages count: a
// request of several parts is that many messages, system prompts are left
// out but developer ones are not, thinking is never sent, and a summary
// marker or a retry prompt keeps what it holds.
func TestCounterMessages(t *testing.T) {
	filler := func(n int) []processor.Message {
		var h []processor.Message
		for i := range n {
			h = append(h, processor.UserMessage("filler"), processor.TextMessage("ok "+string(rune('a'+i%26))))
		}
		return h
	}
	call := func(args string) processor.Message {
		return processor.NewResponse(processor.ToolCall{ToolCallID: "c", ToolName: "run", Args: args})
	}
	for _, tc := range []struct {
		name    string
		history []processor.Message // the last message is the reply counted
		sent    func(before []processor.Message) []processor.Message
		want    Figures
	}{
		{
			name: "system prompt left out",
			history: []processor.Message{processor.SystemMessage("use SYSTEM_TOOL_NAME"), processor.UserMessage("go"),
				processor.TextMessage("calling SYSTEM_TOOL_NAME")},
			sent: func(h []processor.Message) []processor.Message { return h[1:] },
		},
		{
			name: "developer prompt counted",
			history: []processor.Message{processor.NewRequest(processor.SystemPrompt{Content: "use DEVELOPER_TOOL", Developer: true}),
				processor.UserMessage("go"), processor.TextMessage("calling DEVELOPER_TOOL")},
			sent: func(h []processor.Message) []processor.Message { return h[1:] },
			want: Figures{Needed: 1},
		},
		{
			name: "thinking is not sent",
			history: []processor.Message{processor.UserMessage("go"),
				processor.NewResponse(processor.Thinking{Content: "maybe parse_config_file"}, processor.Text{Content: "hm"}),
				processor.UserMessage("?"), call(`{"cmd": "grep parse_config_file"}`)},
			sent: func(h []processor.Message) []processor.Message { return h },
		},
		{
			name: "marker and retry prompt kept",
			history: []processor.Message{processor.UserMessage("fix src/app/main.go"), processor.TextMessage("ok"),
				processor.UserMessage("and LOG_LEVEL_DEBUG"), call(`{"cmd": "edit src/app/main.go LOG_LEVEL_DEBUG"}`)},
			sent: func([]processor.Message) []processor.Message {
				return []processor.Message{processor.UserMessage("Summary: src/app/main.go"),
					processor.NewRequest(processor.RetryPrompt{Content: "bad LOG_LEVEL_DEBUG"})}
			},
			want: Figures{Needed: 2, Kept: 2},
		},
		{
			name: "parts of one request are messages each",
			history: append(append([]processor.Message{
				processor.UserMessage("read docs/guide/setup.md"),
				processor.NewRequest(processor.ToolReturn{ToolCallID: "x", Content: "a"}, processor.ToolReturn{ToolCallID: "y", Content: "b"}),
			}, filler(9)...), processor.TextMessage("see docs/guide/setup.md")),
			// 2 messages of the request + 18 of filler: the path is 21 back.
			sent: func(h []processor.Message) []processor.Message { return h[1:] },
			want: Figures{Needed: 1, Far: 1},
		},
		{
			name: "20 back is near",
			history: append(append([]processor.Message{
				processor.UserMessage("read docs/guide/setup.md"),
				processor.NewRequest(processor.ToolReturn{ToolCallID: "x", Content: "a"}),
			}, filler(9)...), processor.TextMessage("see docs/guide/setup.md")),
			sent: func(h []processor.Message) []processor.Message { return h },
			want: Figures{Needed: 1, Kept: 1},
		},
		{
			name: "a token in the content and the arguments counts once",
			history: []processor.Message{processor.UserMessage("open src/app/main.go"),
				processor.NewResponse(processor.Text{Content: "opening src/app/main.go"},
					processor.ToolCall{ToolCallID: "c", ToolName: "open", Args: `{"path": "src/app/main.go"}`})},
			sent: func(h []processor.Message) []processor.Message { return h },
			want: Figures{Needed: 1, Kept: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := len(tc.history) - 1
			c := New(tc.history)
			c.Request(reply, tc.sent(tc.history[:reply]))
			if diff := cmp.Diff(tc.want, c.Figures()); diff != "" {
				t.Errorf("figures (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCounterOrder checks that requests counted out of order, or again,
// count as they would in order.
func TestCounterOrder(t *testing.T) {
	h, err := transcript.LoadFile(filepath.Join(testdataDir(t), "handbuilt.json"))
	if err != nil {
		t.Fatal(err)
	}
	var replies []int
	for i, m := range h {
		if m.Kind == processor.Response {
			replies = append(replies, i)
		}
	}
	want := New(h)
	got := New(h)
	for _, i := range replies {
		want.Request(i, rules["head2tail10"](h[:i]))
	}
	for _, i := range slices.Backward(replies) {
		got.Request(i, rules["head2tail10"](h[:i]))
	}
	if diff := cmp.Diff(want.Figures(), got.Figures()); diff != "" {
		t.Errorf("backwards (-in order +backwards):\n%s", diff)
	}
}
