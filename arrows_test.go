package abridge_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/abridge-go/abridge"

// pkg is what go list tells of one package.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// listPackages runs go list on every package of the module and returns
// them by import path, with the standard library's packages among their
// dependencies told apart.
func listPackages(t *testing.T) (map[string]pkg, map[string]bool) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: skipping the package arrows")
	}
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports,Deps", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	std := map[string]bool{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Standard {
			std[p.ImportPath] = true
			continue
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs, std
}

// TestArrows checks that the package dependencies point one way, as the
// package map of docs/design.md says: the message model depends on the
// standard library alone; the trimmer, the clearer, the summary format and
// the transcript format on the message model (and, for the clearer, the
// summary format) alone, nothing outside the standard library among their
// dependencies (no model provider's client, no logging library) but the
// shell parser the summary format reads commands with; the summarizers
// (the one Summarizer interface, the LLM summarizer and the offline
// digest) on the message model, the summary format and model's interface;
// the window and on-demand compaction on those and the summarizers, with
// no provider SDK among their dependencies, zap (the LLM summarizer's
// logger) aside; and only package model imports openai-go (besides the
// load command and the test kit, which abridge does not ship).
func TestArrows(t *testing.T) {
	pkgs, std := listPackages(t)
	allowed := map[string][]string{
		"processor":             nil,
		"summary":               {"processor"},
		"processors/trimtools":  {"processor"},
		"processors/cleartools": {"processor", "summary"},
		"summarizer":            {"model", "processor", "summary"},
		"processors/window":     {"model", "processor", "summarizer", "summary"},
		"compact":               {"model", "processor", "summarizer", "summary"},
		// Saved transcripts load without any provider SDK.
		"transcript": {"processor"},
	}
	// The summary format reads shell commands with mvdan.cc/sh's parser;
	// the LLM summarizer logs with zap.
	shellParser := []string{"mvdan.cc/sh/v3/fileutil", "mvdan.cc/sh/v3/syntax"}
	for name, want := range allowed {
		p, ok := pkgs[module+"/"+name]
		if !ok {
			t.Errorf("package %s not found by go list", name)
			continue
		}
		var got, outside []string
		for _, d := range p.Deps {
			switch {
			case std[d]:
			case strings.HasPrefix(d, module+"/"):
				got = append(got, strings.TrimPrefix(d, module+"/"))
			case slices.Contains(shellParser, d) && (name == "summary" || slices.Contains(want, "summary")):
			case strings.HasPrefix(d, "go.uber.org/") && (name == "summarizer" || slices.Contains(want, "summarizer")):
			default:
				outside = append(outside, d)
			}
		}
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s depends on packages of the module other than those allowed (-allowed +got):\n%s", name, diff)
		}
		if len(outside) > 0 {
			t.Errorf("%s depends on packages outside the standard library: %v", name, outside)
		}
	}
	var openai []string
	for path, p := range pkgs {
		if !strings.HasPrefix(path, module) {
			continue
		}
		if slices.ContainsFunc(p.Imports, func(i string) bool { return strings.HasPrefix(i, "github.com/openai/openai-go") }) {
			openai = append(openai, strings.TrimPrefix(path, module+"/"))
		}
	}
	slices.Sort(openai)
	// model and model/openai alone in the library; the load command decodes request bodies
	// into openai-go's request type as the baseline it measures against,
	// and the test kit sends the transcript tests' requests with openai-go
	// as a client does (openaitest.Ask).
	if diff := cmp.Diff([]string{"internal/cmd/proxyload", "internal/testkit/openaitest", "model", "model/openai"}, openai); diff != "" {
		t.Errorf("packages importing openai-go (-want +got):\n%s", diff)
	}
}

// TestTestkitOnlyInTests checks that the test support under
// internal/testkit (the fake upstreams, the browser, the skip note, the
// transcript finder) stays out of what abridge ships: no package of the
// module outside internal/testkit and internal/cmd depends on it, test
// files aside.
func TestTestkitOnlyInTests(t *testing.T) {
	pkgs, _ := listPackages(t)
	var got []string
	for path, p := range pkgs {
		name, ok := strings.CutPrefix(path, module+"/")
		if path == module {
			name, ok = ".", true
		}
		if !ok || strings.HasPrefix(name, "internal/testkit/") || strings.HasPrefix(name, "internal/cmd/") {
			continue
		}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, module+"/internal/testkit/") {
				got = append(got, name+" -> "+strings.TrimPrefix(d, module+"/"))
			}
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string(nil), got); diff != "" {
		t.Errorf("packages outside internal/testkit and internal/cmd depending on internal/testkit (-want +got):\n%s", diff)
	}
}

// TestNoUnsafe checks that no package of the module imports unsafe, tests
// included.
func TestNoUnsafe(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: skipping")
	}
	out, err := exec.Command("go", "list", "-test", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 1 && slices.Contains(fields[1:], "unsafe") {
			t.Errorf("%s imports unsafe", fields[0])
		}
	}
}
