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

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
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
		h, err := model.LoadFile(filepath.Join(testdataDir(t), gt.File))
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
			h, err := model.LoadFile(path)
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
