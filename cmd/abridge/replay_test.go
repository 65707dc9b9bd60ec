package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	abridge "github.com/abridge-go/abridge"
	"github.com/abridge-go/abridge/cmd/abridge/internal/replay"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

func TestReplayShippedOffline(t *testing.T) {
	files := transcripts.Shipped(t)
	r := runCLI(t, nil, "", "replay")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, f := range files {
		// The table names each transcript whole: on its row, or, when
		// the names do not fit, in the list of them above it.
		name, _, _ := strings.Cut(filepath.Base(f), ".") // no dot in their names
		if !strings.Contains(r.stdout, "\n"+name+"  ") && !strings.Contains(r.stdout, "  "+name+"\n") {
			t.Errorf("table does not name %s whole:\n%s", name, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "digest") {
		t.Errorf("table does not say the digest summarized:\n%s", r.stdout)
	}
	if want := digestNote + "\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
}

// TestReplayTable checks that the default table fits a terminal of
// replay.TableWidth columns, and that --wide names every transcript in
// full with every figure.
func TestReplayTable(t *testing.T) {
	tests := []struct {
		name string
		args []string
		wide bool
	}{
		{"default", []string{"replay"}, false},
		{"full mode", []string{"replay", "--mode", "full"}, false},
		{"wide", []string{"replay", "--wide"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, "", tt.args...)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			widest := 0
			for _, l := range strings.Split(r.stdout, "\n") {
				widest = max(widest, utf8.RuneCountInString(l))
			}
			if !tt.wide && widest > replay.TableWidth {
				t.Errorf("the table is %d columns wide, more than %d:\n%s", widest, replay.TableWidth, r.stdout)
			}
			for _, name := range shippedNames(t) {
				full := strings.Contains(r.stdout, "\n"+replay.DisplayName(name)+" ")
				if tt.wide && !full {
					t.Errorf("the wide table does not name %s in full:\n%s", replay.DisplayName(name), r.stdout)
				}
			}
			lines := strings.Split(r.stdout, "\n")
			h := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "transcript ") })
			if h < 1 {
				t.Fatalf("no headings:\n%s", r.stdout)
			}
			headings := lines[h-1] + "\n" + lines[h] + "\n"
			for _, heading := range []string{"messages", "fallback", "ceiling", "processor CPU"} {
				if got := strings.Contains(headings, heading+" ") || strings.Contains(headings, heading+"\n"); got != tt.wide {
					t.Errorf("the table has a %q heading: %v, want %v:\n%s", heading, got, tt.wide, r.stdout)
				}
			}
		})
	}
}

func TestReplayJSON(t *testing.T) {
	files := transcripts.Shipped(t)
	for _, mode := range []string{"processed", "full"} {
		t.Run(mode, func(t *testing.T) {
			r := runCLI(t, nil, "", "replay", "--json", "--mode", mode)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			var report map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
				t.Fatalf("--json output does not parse: %v\n%s", err, r.stdout)
			}
			for _, f := range files {
				if !strings.Contains(r.stdout, filepath.Base(f)) {
					t.Errorf("JSON does not mention %s", filepath.Base(f))
				}
			}
			if !strings.Contains(r.stdout, `"`+mode+`"`) {
				t.Errorf("JSON does not record mode %q", mode)
			}
			// The needed tokens kept, per transcript and in total.
			var fig struct {
				Results []map[string]any `json:"results"`
				Total   map[string]any   `json:"total"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &fig); err != nil {
				t.Fatal(err)
			}
			for _, x := range append(fig.Results, fig.Total) {
				for _, key := range []string{"needed_kept", "needed_kept_far"} {
					if v, ok := x[key].(float64); !ok || v < 0 || v > 1 {
						t.Errorf("%v: %s = %v, want a share", x["file"], key, x[key])
					}
				}
			}
		})
	}
}

// TestReplaySettings checks that the header and --json's options name
// every setting the environment changes the replay with.
func TestReplaySettings(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		header  []string
		options map[string]any
	}{
		{"defaults", nil, []string{"max messages 40", "no token trigger", "tail of 20 messages", "trim at 2,000 characters"},
			map[string]any{"max_messages": 40.0, "trigger_tokens": 0.0, "keep_messages": 0.0, "tail_outputs": 0.0}},
		{"token trigger", map[string]string{"ABRIDGE_TRIGGER_TOKENS": "5000"}, []string{"token trigger at 5,000 tokens"},
			map[string]any{"trigger_tokens": 5000.0}},
		{"economy", map[string]string{"ABRIDGE_STRATEGY": "economy"},
			[]string{"strategy economy", "max messages 24", "tail of 6 messages", "the tail's tool outputs cleared but the last round's", "trim at 1,000 characters"},
			map[string]any{"strategy": "economy", "max_messages": 24.0, "keep_messages": 6.0, "tail_outputs": 1.0, "trim_max_chars": 1000.0}},
		{"kept tail", map[string]string{"ABRIDGE_KEEP_MESSAGES": "8"}, []string{"tail of 8 messages"}, map[string]any{"keep_messages": 8.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, tt.env, "", "replay", "testdata/history.json")
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			header := strings.Join(strings.Fields(strings.SplitN(r.stdout, "\n\n", 2)[0]), " ")
			for _, w := range tt.header {
				if !strings.Contains(header, w) {
					t.Errorf("header %q does not say %q", header, w)
				}
			}
			r = runCLI(t, tt.env, "", "replay", "--json", "testdata/history.json")
			var report struct{ Options map[string]any }
			if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
				t.Fatalf("--json: %v\n%s", err, r.stdout)
			}
			for k, want := range tt.options {
				if got := report.Options[k]; got != want {
					t.Errorf("options.%s = %v, want %v", k, got, want)
				}
			}
		})
	}
}

// TestReplayPlot writes the plot in each format it takes, one panel per
// transcript, and checks the mistakes: an extension of no supported format
// is refused before anything is replayed, and a path that cannot be
// written is named once in one line.
func TestReplayPlot(t *testing.T) {
	dir := t.TempDir()
	n := len(shippedNames(t))
	tests := []struct {
		name   string
		path   string
		files  []string // replayed; none: the shipped ones
		code   int
		header string // what the file written starts with
		stderr string // its last line
	}{
		{"svg", filepath.Join(dir, "prompt.svg"), nil, 0, "<?xml",
			fmt.Sprintf("abridge: wrote %s: estimated prompt tokens per request, one panel for each of the %d transcripts", filepath.Join(dir, "prompt.svg"), n)},
		{"png", filepath.Join(dir, "prompt.png"), nil, 0, "\x89PNG\r\n",
			fmt.Sprintf("abridge: wrote %s: estimated prompt tokens per request, one panel for each of the %d transcripts", filepath.Join(dir, "prompt.png"), n)},
		{"one transcript", filepath.Join(dir, "one.svg"), []string{"testdata/history.json"}, 0, "<?xml",
			fmt.Sprintf("abridge: wrote %s: estimated prompt tokens per request of %s", filepath.Join(dir, "one.svg"), replay.DisplayName("testdata/history.json"))},
		{"jpeg", filepath.Join(dir, "prompt.jpg"), nil, 2, "", "abridge: replay: --plot " + filepath.Join(dir, "prompt.jpg") + ": want a .svg or .png file"},
		{"missing directory", filepath.Join(dir, "missing", "prompt.svg"), nil, 1, "",
			"abridge: replay: plot " + filepath.Join(dir, "missing", "prompt.svg") + ": " + syscall.ENOENT.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, "", append([]string{"replay", "--plot", tt.path}, tt.files...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, tt.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if last := lines[len(lines)-1]; last != tt.stderr {
				t.Errorf("last stderr line = %q, want %q", last, tt.stderr)
			}
			if tt.code != 0 {
				if _, err := os.Stat(tt.path); err == nil {
					t.Errorf("a failed plot left %s behind", tt.path)
				}
				if tt.code == exitUsage && r.stdout != "" {
					t.Errorf("a usage mistake replayed anyway: stdout %q", r.stdout)
				}
				return
			}
			b, err := os.ReadFile(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), tt.header) {
				t.Errorf("%s starts %q, want %q", tt.path, b[:min(len(b), 16)], tt.header)
			}
		})
	}
}

// TestReplayModel replays a small history with a window small enough to
// compact, against a fake OpenAI server: the summaries come from it.
func TestReplayModel(t *testing.T) {
	f := newFakeOpenAI(t)
	r := runCLI(t, f.env("ABRIDGE_MAX_MESSAGES", "6"), "", "replay", "--json", "testdata/history.json")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "digest") {
		t.Errorf("stderr mentions the digest with an endpoint configured:\n%s", r.stderr)
	}
	var report struct {
		Options struct{ Summarizer string } `json:"options"`
		Total   struct {
			SummarizerCalls int `json:"summarizer_calls"`
			Invalid         int `json:"invalid_requests"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, r.stdout)
	}
	if report.Options.Summarizer != "model" {
		t.Errorf("summarizer = %q, want model", report.Options.Summarizer)
	}
	n := 0
	for _, req := range f.Requests() {
		if req.summary() {
			n++
		}
	}
	if n == 0 {
		t.Errorf("the server received no summary request")
	}
	if report.Total.SummarizerCalls == 0 || report.Total.Invalid != 0 {
		t.Errorf("summarizer calls %d, invalid requests %d; want some and 0", report.Total.SummarizerCalls, report.Total.Invalid)
	}
}

// TestReplayOutsideModule runs replay without FILE in a directory outside
// any Go module: it replays the transcripts the binary holds.
func TestReplayOutsideModule(t *testing.T) {
	t.Chdir(t.TempDir())
	r := runCLI(t, nil, "", "replay", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	var report replay.Report
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, r.stdout)
	}
	var got []string
	for _, x := range report.Results {
		got = append(got, x.File)
	}
	if diff := cmp.Diff(shippedNames(t), got); diff != "" {
		t.Errorf("replayed transcripts (-shipped +replayed):\n%s", diff)
	}
}

// TestReplayInstalled builds the abridge binary and runs "abridge replay"
// with no FILE from an empty directory outside the module, with none of
// the environment but PATH: the report covers every shipped transcript,
// with the figures an in-process replay of the same files gives.
func TestReplayInstalled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary: skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build abridge with: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "abridge")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			t.Fatalf("%s holds a go.mod: the binary would run inside a module", d)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	cmd := exec.Command(bin, "replay", "--json")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("abridge replay from %s: %v; stderr:\n%s", dir, err, stderr.String())
	}
	var got replay.Report
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, stdout.String())
	}
	want, err := replay.Run(t.Context(), transcripts.Shipped(t), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type figures struct {
		File                              string
		Requests, Compactions             int
		SummarizerInputChars              int64
		MeanTokensBefore, MeanTokensAfter float64
		InvalidRequests                   int
	}
	summary := func(r *replay.Report) []figures {
		var out []figures
		for _, x := range append(r.Results, r.Total) {
			out = append(out, figures{filepath.Base(x.File), x.Requests, x.Compactions, x.SummarizerInputChars,
				x.MeanTokensBefore, x.MeanTokensAfter, x.InvalidRequests})
		}
		return out
	}
	if diff := cmp.Diff(summary(want), summary(&got)); diff != "" {
		t.Errorf("the installed binary's replay differs from the shipped files' (-files +binary):\n%s", diff)
	}
}

// TestReplayInvalid replays transcripts of which some are broken (a tool
// call never answered): replay prints its report and fails on one line
// that says how many requests were invalid, in which transcripts, and the
// first error.
func TestReplayInvalid(t *testing.T) {
	dir := t.TempDir()
	broken := []processor.Message{
		processor.UserMessage("list the files"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: "{}"}),
		processor.UserMessage("never mind"),
		processor.TextMessage("ok"),
	}
	brokenFile := filepath.Join(dir, "unanswered.json")
	saveFile(t, brokenFile, broken)
	twice := filepath.Join(dir, "unanswered-twice.json")
	saveFile(t, twice, append(slices.Clone(broken), processor.UserMessage("and now?"), processor.TextMessage("still ok")))

	tests := []struct {
		name  string
		files []string
	}{
		{"one broken", []string{brokenFile}},
		{"broken among valid", []string{"testdata/history.json", brokenFile, twice}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, "", append([]string{"replay", "--json"}, tt.files...)...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1", r.code)
			}
			var report replay.Report
			if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
				t.Fatalf("the report is not printed as JSON: %v\n%s", err, r.stdout)
			}
			total := report.Total
			if total.InvalidRequests == 0 {
				t.Fatalf("the report counts no invalid request")
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			want := fmt.Sprintf("abridge: replay: %d of %d requests invalid (", total.InvalidRequests, total.Requests)
			if !strings.HasPrefix(last, want) {
				t.Errorf("last stderr line = %q, want it to start %q", last, want)
			}
			for _, x := range report.Results {
				where := fmt.Sprintf("%d in %s", x.InvalidRequests, x.File)
				if got := strings.Contains(last, where); got != (x.InvalidRequests > 0) {
					t.Errorf("stderr names %q: %v, want %v:\n%s", where, got, x.InvalidRequests > 0, last)
				}
			}
			if !strings.HasSuffix(last, "; first: "+total.FirstError) {
				t.Errorf("stderr does not end with the first error %q:\n%s", total.FirstError, last)
			}
		})
	}
}

// shippedNames returns the names of the transcripts the binary embeds.
func shippedNames(t *testing.T) []string {
	t.Helper()
	_, names := abridge.Transcripts()
	return names
}
