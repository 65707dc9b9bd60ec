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

// moduleName returns the name the arrows give a package of the module (its
// path inside the module, "." for the module's root), and false for a
// package outside it.
func moduleName(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	return strings.CutPrefix(path, module+"/")
}

// TestArrows checks that the package dependencies point one way, as the
// package map of docs/design.md says: the message model depends on the
// standard library alone; the trimmer, the clearer, the summary format and
// the transcript format on the message model (and, for the clearer, the
// summary format) alone, nothing outside the standard library among their
// dependencies (no model provider's client, no logging library) but the
// shell parser the summary format reads commands with and the JSON library
// the Chat Completions codec reads with; the summarizers' contract and the
// offline digest on the message model and the summary format alone, and
// the window and on-demand compaction on those (so neither links package
// model nor a logging library); the LLM summarizer on those, package model
// and zap; the wire codecs on the
// message model, that codec and the API error shape alone (no SDK, not
// package model); package model on the message model alone; and only the
// provider packages model/openai and model/anthropic import a provider's
// SDK, each its own (besides the load command and the test kits, which
// abridge does not ship), so that the agent, the summarizers, the
// middleware and the proxy link none; and a session store links only the
// database driver it picks (checkDatabaseDrivers).
func TestArrows(t *testing.T) {
	pkgs, std := listPackages(t)
	checkDatabaseDrivers(t, pkgs)
	allowed := map[string][]string{
		"processor":             nil,
		"summary":               {"processor"},
		"processors/trimtools":  {"processor"},
		"processors/cleartools": {"processor", "summary"},
		"summarizer":            {"processor", "summary"},
		"processors/window":     {"processor", "summarizer", "summary"},
		"compact":               {"processor", "summarizer", "summary"},
		// The LLM summarizer calls model's interface and logs with zap.
		"summarizer/llm": {"internal/apierror", "model", "processor", "summarizer", "summary"},
		// Saved transcripts load without any provider SDK; the Chat
		// Completions reader and writer there are the codec's too.
		"transcript": {"processor"},
		// The interface, settings and error every caller needs: no SDK.
		"model": {"internal/apierror", "processor"},
		// The codecs link no SDK and not package model: the proxy and
		// the middleware read bodies without them.
		"internal/wire":     {"internal/apierror", "processor", "transcript"},
		"internal/apierror": nil,
	}
	// The summary format reads shell commands with mvdan.cc/sh's parser.
	shellParser := []string{"mvdan.cc/sh/v3/fileutil", "mvdan.cc/sh/v3/syntax"}
	// The Chat Completions codec (transcript) and the wire codecs read
	// JSON with go-json-experiment (encoding/json/v2).
	jsonLib := func(d string) bool {
		return d == "github.com/go-json-experiment/json" || strings.HasPrefix(d, "github.com/go-json-experiment/json/")
	}
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
			case jsonLib(d) && (name == "transcript" || slices.Contains(want, "transcript")):
			// zap and what it links (go.uber.org/multierr), for the LLM
			// summarizer alone: not for the window or compact.
			case strings.HasPrefix(d, "go.uber.org/") && name == "summarizer/llm":
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
	sdks := map[string]string{"openai-go": "github.com/openai/openai-go", "anthropic-sdk-go": "github.com/anthropics/anthropic-sdk-go"}
	importers := map[string][]string{}
	for path, p := range pkgs {
		if !strings.HasPrefix(path, module) {
			continue
		}
		for sdk, prefix := range sdks {
			if slices.ContainsFunc(p.Imports, func(i string) bool { return strings.HasPrefix(i, prefix) }) {
				importers[sdk] = append(importers[sdk], strings.TrimPrefix(path, module+"/"))
			}
		}
	}
	for _, list := range importers {
		slices.Sort(list)
	}
	// Each SDK in its provider's package alone in the library; the load
	// command decodes request bodies into openai-go's request type as the
	// baseline it measures against, and the test kit sends the transcript
	// tests' requests with openai-go as a client does (openaitest.Ask).
	want := map[string][]string{
		"openai-go":        {"cmd/proxyload", "model/openai", "testkit/openaitest"},
		"anthropic-sdk-go": {"model/anthropic"},
	}
	if diff := cmp.Diff(want, importers); diff != "" {
		t.Errorf("packages importing each SDK (-want +got):\n%s", diff)
	}
	// Nor do the callers of a model link one through another package.
	for _, name := range []string{"model", "agent", "summarizer", "summarizer/llm", "compact", "middleware", "proxy", "internal/wire", "transcript", "receipt", "session"} {
		var linked []string
		for _, d := range pkgs[module+"/"+name].Deps {
			for _, prefix := range sdks {
				if strings.HasPrefix(d, prefix) {
					linked = append(linked, d)
				}
			}
		}
		if len(linked) > 0 {
			t.Errorf("%s links %d SDK packages: %v", name, len(linked), linked)
		}
	}
}

// databaseDrivers are the database clients a session store may link, by
// the name the arrows give them.
var databaseDrivers = map[string]string{
	"pgx":    "github.com/jackc/pgx/",
	"sqlite": "modernc.org/sqlite",
}

// checkDatabaseDrivers checks that a program links the database driver it
// picks and no other: package session and its backend interface link
// neither driver, session/sqlite links SQLite alone and session/postgres
// pgx alone; only what picks the driver from a DSN (config, and the
// commands built on it) links both, and the PostgreSQL test kit links pgx.
func checkDatabaseDrivers(t *testing.T, pkgs map[string]pkg) {
	t.Helper()
	want := map[string][]string{
		"session":                  nil,
		"session/internal/backend": nil,
		"session/sqlite":           {"sqlite"},
		"session/postgres":         {"pgx"},
		"config":                   {"pgx", "sqlite"},
		"cmd/abridge":              {"pgx", "sqlite"},
		"cmd/proxyload":            {"pgx", "sqlite"},
		"testkit/pgtest":           {"pgx"},
	}
	for path, p := range pkgs {
		name, ok := moduleName(path)
		if !ok {
			continue
		}
		var got []string
		for driver, prefix := range databaseDrivers {
			if slices.ContainsFunc(p.Deps, func(d string) bool { return strings.HasPrefix(d, prefix) }) {
				got = append(got, driver)
			}
		}
		slices.Sort(got)
		if diff := cmp.Diff(want[name], got); diff != "" {
			t.Errorf("%s links database drivers other than those allowed (-allowed +got):\n%s", name, diff)
		}
	}
	for name := range want {
		if _, ok := pkgs[module+"/"+name]; !ok {
			t.Errorf("package %s not found by go list", name)
		}
	}
}

// TestTestkitOnlyInTests checks that the test support under testkit/
// (the fake upstreams, the browser, the skip note, the transcript finder,
// the log keys) stays out of what abridge ships: no package of the module
// outside testkit/ and the load command cmd/proxyload depends on it, test
// files aside.
func TestTestkitOnlyInTests(t *testing.T) {
	pkgs, _ := listPackages(t)
	var got []string
	for path, p := range pkgs {
		name, ok := moduleName(path)
		if !ok || strings.HasPrefix(name, "testkit/") || name == "cmd/proxyload" {
			continue
		}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, module+"/testkit/") {
				got = append(got, name+" -> "+strings.TrimPrefix(d, module+"/"))
			}
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string(nil), got); diff != "" {
		t.Errorf("packages outside testkit/ and cmd/proxyload depending on testkit/ (-want +got):\n%s", diff)
	}
}

// TestInternalIsProduction checks that internal/ holds production code
// only: each of its packages is a dependency of a package abridge ships
// (the library's packages and cmd/abridge), not of the test support or the
// load command alone.
func TestInternalIsProduction(t *testing.T) {
	pkgs, _ := listPackages(t)
	used := map[string]bool{}
	var internal []string
	for path, p := range pkgs {
		name, ok := moduleName(path)
		if !ok {
			continue
		}
		if strings.HasPrefix(name, "internal/") {
			internal = append(internal, name)
		}
		if strings.HasPrefix(name, "internal/") || strings.HasPrefix(name, "testkit/") || name == "cmd/proxyload" {
			continue
		}
		for _, d := range p.Deps {
			used[strings.TrimPrefix(d, module+"/")] = true
		}
	}
	if len(internal) == 0 {
		t.Fatal("go list found no package under internal/")
	}
	var unused []string
	for _, name := range internal {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	slices.Sort(unused)
	if diff := cmp.Diff([]string(nil), unused); diff != "" {
		t.Errorf("packages under internal/ that nothing abridge ships depends on (-want +got):\n%s", diff)
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
