package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/transcript"
)

func TestProcess(t *testing.T) {
	in, err := transcript.LoadFile("testdata/history.json")
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeOpenAI(t)
	tests := []struct {
		name      string
		env       map[string]string
		wantLess  bool     // fewer messages out than in
		wantErr   []string // on stderr
		wantOut   string   // in the processed history, when set
		summaries int      // summary requests the server receives
		// wantNote is whether stderr says the offline digest summarizes:
		// only when it does.
		wantNote bool
	}{
		{
			name:    "defaults offline",
			env:     nil,
			wantErr: []string{"messages: 18 → 18", "tool returns trimmed: 1", "compaction: no"},
		},
		{
			name:     "small window offline",
			env:      map[string]string{"ABRIDGE_MAX_MESSAGES": "8"},
			wantLess: true,
			// The trimmed return is among those summarized: still counted.
			wantErr: []string{"messages: 18 → 8", "tool returns trimmed: 1",
				"compaction: yes, 11 messages summarized (offline digest)"},
			wantNote: true,
		},
		{
			name:    "trimming off",
			env:     map[string]string{"ABRIDGE_TRIM_MAX_CHARS": "-1"},
			wantErr: []string{"tool returns trimmed: 0", "compaction: no"},
		},
		{
			name:      "small window with a model",
			env:       f.env("ABRIDGE_MAX_MESSAGES", "8"),
			wantLess:  true,
			wantErr:   []string{"compaction: yes", "summary by the model"},
			wantOut:   "SUMMARY: the user is fixing a nil map panic",
			summaries: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.Requests())
			r := runCLI(t, tt.env, "", "process", "testdata/history.json")
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			out, err := transcript.Load(strings.NewReader(r.stdout))
			if err != nil {
				t.Fatalf("stdout is not an OpenAI history: %v\n%s", err, r.stdout)
			}
			if err := processor.Validate(out); err != nil {
				t.Errorf("processed history is invalid: %v", err)
			}
			if diff := cmp.Diff(in[len(in)-1], out[len(out)-1]); diff != "" {
				t.Errorf("last request changed (-in +out):\n%s", diff)
			}
			if got := len(out) < len(in); got != tt.wantLess {
				t.Errorf("%d messages out of %d in; want fewer: %v", len(out), len(in), tt.wantLess)
			}
			// One token basis: what compact reports for the same file.
			tokensLine := fmt.Sprintf("tokens: %s → %s (", tokens(processor.ContentTokens(in)), tokens(processor.ContentTokens(out)))
			for _, w := range append(tt.wantErr, tokensLine) {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, r.stderr)
				}
			}
			if tt.wantOut != "" && !strings.Contains(r.stdout, tt.wantOut) {
				t.Errorf("processed history does not hold %q:\n%s", tt.wantOut, r.stdout)
			}
			if got := strings.Contains(r.stderr, digestNote); got != tt.wantNote {
				t.Errorf("stderr says %q: %v, want %v:\n%s", digestNote, got, tt.wantNote, r.stderr)
			}
			n := 0
			for _, req := range f.Requests()[before:] {
				if req.summary() {
					n++
				}
			}
			if n != tt.summaries {
				t.Errorf("the server received %d summary requests, want %d", n, tt.summaries)
			}
		})
	}
}

// TestProcessEndsWithResponse processes a history that ends with the
// model's answer: the chain runs up to the last request and the answer is
// kept after it.
func TestProcessEndsWithResponse(t *testing.T) {
	in, err := transcript.LoadFile("testdata/history.json")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/answered.json"
	saveFile(t, path, in[:len(in)-1])
	r := runCLI(t, nil, "", "process", path)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	out, err := transcript.Load(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in[len(in)-2], out[len(out)-1]); diff != "" {
		t.Errorf("final response changed (-in +out):\n%s", diff)
	}
	if !strings.Contains(r.stderr, "history ends with a response") {
		t.Errorf("stderr does not say the history ends with a response:\n%s", r.stderr)
	}
}

// TestOneTokenBasis: process and compact give the same file the same size
// before, and compact refuses a compaction that would make the history
// larger instead of reporting it.
func TestOneTokenBasis(t *testing.T) {
	before := func(re, stderr string) string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("stderr lacks %s:\n%s", re, stderr)
		}
		return m[1]
	}
	p := runCLI(t, nil, "", "process", "testdata/history.json")
	c := runCLI(t, nil, "", "compact", "testdata/history.json")
	if p.code != 0 || c.code != 0 {
		t.Fatalf("exit %d and %d:\n%s\n%s", p.code, c.code, p.stderr, c.stderr)
	}
	pb := before(`tokens: (\S+) → `, p.stderr)
	cb := before(`compacted \d+ → \d+ messages \((\S+) → `, c.stderr)
	if pb != cb {
		t.Errorf("process counts %s tokens before, compact %s", pb, cb)
	}

	tiny := t.TempDir() + "/tiny.json"
	saveFile(t, tiny, []processor.Message{processor.UserMessage("hi"), processor.TextMessage("hello"), processor.UserMessage("bye")})
	r := runCLI(t, nil, "", "compact", tiny)
	if r.code != 1 || !strings.Contains(r.stderr, "compaction would not shrink the history: 16 estimated tokens before") || r.stdout != "" {
		t.Errorf("compact of a tiny history: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
