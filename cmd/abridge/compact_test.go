package main

import (
	"os"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

func TestCompact(t *testing.T) {
	f := newFakeOpenAI(t)
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		wantErr   []string // on stderr
		wantOut   string   // in the compacted history
		wantFocus string   // in the summary request, when set
		wantModel string   // the summary request's model, when set
	}{
		{
			name:    "offline",
			args:    []string{"compact", "testdata/history.json"},
			wantErr: []string{digestNote + "\n", "compacted 18 → 3 messages"},
			wantOut: "store/store.go",
		},
		{
			name:    "offline with focus",
			args:    []string{"compact", "--focus", "the Delete method", "testdata/history.json"},
			wantErr: []string{"offline digest, which cannot follow the focus", "compacted 18 → 3 messages"},
			wantOut: "store/store.go",
		},
		{
			name:    "offline from stdin",
			args:    []string{"compact", "-"},
			wantErr: []string{"compacted 18 → 3 messages"},
			wantOut: "store/store.go",
		},
		{
			name:      "model with focus",
			env:       f.env(),
			args:      []string{"compact", "--focus", "the Delete method", "testdata/history.json"},
			wantErr:   []string{"compacted 18 → 3 messages"},
			wantOut:   "SUMMARY: the user is fixing a nil map panic",
			wantFocus: "the Delete method",
			wantModel: "gpt-4.1-mini",
		},
		{
			name: "summarizer endpoint only",
			env: map[string]string{"ABRIDGE_SUMMARY_BASE_URL": f.srv.URL, "ABRIDGE_SUMMARY_API_KEY": "test",
				"ABRIDGE_SUMMARY_MODEL": "small-summarizer"},
			args:      []string{"compact", "--focus", "the Delete method", "testdata/history.json"},
			wantErr:   []string{"compacted 18 → 3 messages"},
			wantOut:   "SUMMARY: the user is fixing a nil map panic",
			wantFocus: "the Delete method",
			wantModel: "small-summarizer",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.Requests())
			stdin := ""
			if tt.args[len(tt.args)-1] == "-" {
				b, err := os.ReadFile("testdata/history.json")
				if err != nil {
					t.Fatal(err)
				}
				stdin = string(b)
			}
			r := runCLI(t, tt.env, stdin, tt.args...)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			out, err := model.Load(strings.NewReader(r.stdout))
			if err != nil {
				t.Fatalf("stdout is not an OpenAI history: %v\n%s", err, r.stdout)
			}
			// the system prompt, the summary, the acknowledgement
			if len(out) != 3 || out[0].Parts[0].PartKind() != "system-prompt" || out[2].Kind != processor.Response {
				t.Errorf("compacted history has %d messages, want a system prompt, a summary and a response", len(out))
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, r.stderr)
				}
			}
			if !strings.Contains(r.stdout, tt.wantOut) {
				t.Errorf("compacted history does not hold %q:\n%s", tt.wantOut, r.stdout)
			}
			reqs := f.Requests()[before:]
			if tt.wantFocus == "" {
				if len(reqs) != 0 {
					t.Errorf("the server received %d requests, want none", len(reqs))
				}
				return
			}
			if len(reqs) != 1 || !reqs[0].summary() {
				t.Fatalf("the server received %d requests, want one summary request", len(reqs))
			}
			if last := reqs[0].text(len(reqs[0].Messages) - 1); !strings.Contains(last, tt.wantFocus) {
				t.Errorf("summary request does not carry the focus %q:\n%s", tt.wantFocus, last)
			}
			if reqs[0].Model != tt.wantModel {
				t.Errorf("summary request for model %q, want %q", reqs[0].Model, tt.wantModel)
			}
		})
	}
}
