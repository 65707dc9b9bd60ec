package abridge_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/abridge-go/abridge/config"
)

// uncheckedLanguages are the fenced blocks the docs test reads but does
// not check, each with the reason.
var uncheckedLanguages = map[string]string{
	"text": "output a command printed, quoted as it was",
	"toml": "Codex CLI's configuration: no TOML parser is among the module's dependencies; TestAgentsThroughServe runs Codex with the same keys",
}

// block is one fenced code block of a Markdown file.
type block struct {
	file string // relative to the repository's root
	line int    // of the opening fence, from 1
	lang string
	text string
}

func (b block) String() string { return fmt.Sprintf("%s:%d (%s block)", b.file, b.line, b.lang) }

// docFiles returns README.md and every docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, files...)
}

// fences reads the fenced blocks of a Markdown file. Every fence must
// name its language, and every block must be closed.
func fences(file string, data []byte) ([]block, error) {
	var (
		blocks []block
		open   *block
		text   strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if open == nil {
			if info, ok := strings.CutPrefix(line, "```"); ok {
				if info = strings.TrimSpace(info); info == "" {
					return nil, fmt.Errorf("%s:%d: a fenced block without a language", file, n)
				}
				open = &block{file: file, line: n, lang: strings.Fields(info)[0]}
				text.Reset()
			}
			continue
		}
		if strings.TrimSpace(line) == "```" {
			open.text = text.String()
			blocks = append(blocks, *open)
			open = nil
			continue
		}
		text.WriteString(line)
		text.WriteByte('\n')
	}
	if open != nil {
		return nil, fmt.Errorf("%s: the block opened at line %d is never closed", file, open.line)
	}
	return blocks, sc.Err()
}

// TestDocs checks the README and every page of docs/: each fenced block
// (Go files build, shell lines name existing commands, subcommands,
// flags, packages and tests; JSON parses; text and TOML are allowed, see
// uncheckedLanguages), the relative links and their anchors, and that
// every test, benchmark, fuzz target, example and ABRIDGE_ variable named
// in the prose exists.
func TestDocs(t *testing.T) {
	files := docFiles(t)
	texts := map[string]string{}
	var blocks []block
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(data)
		bs, err := fences(f, data)
		if err != nil {
			t.Error(err)
			continue
		}
		blocks = append(blocks, bs...)
	}
	funcs := testFuncs(t)

	t.Run("names", func(t *testing.T) { checkNames(t, texts, funcs) })
	t.Run("links", func(t *testing.T) { checkLinks(t, texts) })

	byLang := map[string][]block{}
	for _, b := range blocks {
		byLang[b.lang] = append(byLang[b.lang], b)
	}
	for lang, bs := range byLang {
		switch lang {
		case "go", "sh":
		case "json":
			for _, b := range bs {
				if !json.Valid([]byte(b.text)) {
					t.Errorf("%v: not valid JSON", b)
				}
			}
		default:
			if _, ok := uncheckedLanguages[lang]; !ok {
				for _, b := range bs {
					t.Errorf("%v: no check for %q blocks; check them in TestDocs or list the language in uncheckedLanguages with why", b, lang)
				}
			}
		}
	}
	t.Run("go", func(t *testing.T) { checkGo(t, byLang["go"]) })
	t.Run("sh", func(t *testing.T) { checkShell(t, byLang["sh"], funcs) })
}

// testFuncs returns the tests, benchmarks, fuzz targets and examples of
// the module, by the directory of their package (relative, "." for the
// root).
func testFuncs(t *testing.T) map[string][]string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
	funcs := map[string][]string{}
	for _, path := range goFiles(t) {
		if !strings.HasSuffix(path, "_test.go") {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			funcs[filepath.Dir(path)] = append(funcs[filepath.Dir(path)], m[1])
		}
	}
	return funcs
}

// goFiles returns the module's Go files, outside testdata, node_modules
// and hidden directories.
func goFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules"):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, ".go"):
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkNames fails for a test, benchmark, fuzz target or example the docs
// name that no package has, and for an ABRIDGE_ variable that neither the
// configuration nor any Go file or CI script knows.
func checkNames(t *testing.T, texts map[string]string, funcs map[string][]string) {
	known := map[string]bool{}
	for _, fs := range funcs {
		for _, f := range fs {
			known[f] = true
		}
	}
	vars := map[string]bool{}
	for _, v := range config.Variables() {
		vars[v.Name] = true
	}
	varRE := regexp.MustCompile(`\bABRIDGE_[A-Z0-9_]*[A-Z0-9]\b`)
	sources, err := filepath.Glob(".ci/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(sources, goFiles(t)...) {
		if f == "docs_test.go" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range varRE.FindAllString(string(data), -1) {
			vars[v] = true
		}
	}
	funcRE := regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz|Example)[A-Z]\w*`)
	for file, text := range texts {
		for _, name := range funcRE.FindAllString(text, -1) {
			if !known[name] {
				t.Errorf("%s names %s, which no package of the module has", file, name)
			}
		}
		for _, v := range varRE.FindAllString(text, -1) {
			if !vars[v] {
				t.Errorf("%s names %s, which neither config.Variables nor any Go file or CI script knows", file, v)
			}
		}
	}
}

// checkLinks fails for a relative link whose file does not exist, or
// whose anchor no heading of that file makes (as GitHub makes them).
func checkLinks(t *testing.T, texts map[string]string) {
	linkRE := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	headings := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := map[string]bool{}
		data, err := os.ReadFile(file)
		if err == nil {
			in := false
			for _, line := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(line, "```") {
					in = !in
				}
				if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && !in && strings.HasPrefix(line, "#") {
					s := slug(h)
					for n := 1; a[s]; n++ {
						s = slug(h) + "-" + strconv.Itoa(n)
					}
					a[s] = true
				}
			}
		}
		anchors[file] = a
		return a
	}
	for file, text := range texts {
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s links to %s, which does not exist", file, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !headings(dest)[anchor] {
				t.Errorf("%s links to %s: %s has no heading with the anchor #%s", file, target, dest, anchor)
			}
		}
	}
}

// slug is the anchor GitHub gives a heading: lower case, the characters
// other than letters, digits, spaces, hyphens and underscores dropped,
// spaces made hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkGo checks that each Go block is a whole gofmt-formatted file, that
// a main package has its main, that it imports nothing internal to the
// module, and that it builds: go build compiles each as a package of the
// module, placed by -overlay under internal/docblocks, which does not
// exist.
func checkGo(t *testing.T, blocks []block) {
	if len(blocks) == 0 {
		return
	}
	goCmd := needGo(t)
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	names := map[string]block{}
	for _, b := range blocks {
		f, err := parser.ParseFile(token.NewFileSet(), b.String(), b.text, parser.ParseComments)
		if err != nil {
			t.Errorf("%v is not a whole Go file (package clause, imports, declarations): %v", b, err)
			continue
		}
		if formatted, err := format.Source([]byte(b.text)); err == nil && string(formatted) != b.text {
			t.Errorf("%v is not gofmt-formatted", b)
		}
		if f.Name.Name == "main" && !slices.ContainsFunc(f.Decls, isMain) {
			t.Errorf("%v: package main without func main", b)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, module+"/internal/") {
				t.Errorf("%v imports %s, which a user of the module cannot", b, p)
			}
		}
		name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(fmt.Sprintf("%s_L%d", b.file, b.line), "_"))
		src := filepath.Join(tmp, name+".go")
		if err := os.WriteFile(src, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(root, "internal", "docblocks", name, "doc.go")] = src
		pkgs = append(pkgs, "./internal/docblocks/"+name)
		names[name] = b
	}
	if len(pkgs) == 0 {
		return
	}
	ov, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	ovFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovFile, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "bin") + string(filepath.Separator)
	cmd := exec.Command(goCmd, append([]string{"build", "-overlay", ovFile, "-o", out}, pkgs...)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the Go blocks do not build (each file is named after its Markdown file and line): %v\n%s", err, msg)
	}
}

// isMain reports whether d is a package's func main.
func isMain(d ast.Decl) bool {
	fn, ok := d.(*ast.FuncDecl)
	return ok && fn.Recv == nil && fn.Name.Name == "main"
}

// needGo returns the go command, or skips the test when there is none.
func needGo(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: the Go blocks and the command lines of the docs are not checked")
	}
	return goCmd
}

// cli is what a command's help says it accepts.
type cli struct {
	commands map[string]bool            // abridge's subcommands
	flags    map[string]map[string]bool // by subcommand; "" for proxyload's
}

// helpFlagRE finds a flag in a help text: "  --name" (abridge) or
// "  -name" (the flag package's usage, proxyload).
var helpFlagRE = regexp.MustCompile(`(?m)^\s+--?([a-z][a-z0-9-]*)\b`)

// buildCLIs builds abridge and the load command, and reads their help.
func buildCLIs(t *testing.T, goCmd string) (abridge, proxyload string, c cli) {
	t.Helper()
	dir := t.TempDir()
	if msg, err := exec.Command(goCmd, "build", "-o", dir+string(filepath.Separator), "./cmd/abridge", "./cmd/proxyload").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/abridge ./cmd/proxyload: %v\n%s", err, msg)
	}
	abridge, proxyload = filepath.Join(dir, "abridge"), filepath.Join(dir, "proxyload")
	help, err := exec.Command(abridge, "help").Output()
	if err != nil {
		t.Fatalf("abridge help: %v", err)
	}
	c = cli{commands: map[string]bool{}, flags: map[string]map[string]bool{}}
	_, commands, ok := strings.Cut(string(help), "\nCommands:\n")
	if !ok {
		t.Fatalf("abridge help lists no commands:\n%s", help)
	}
	// The section is indented lines after a blank one, up to the next blank.
	commands, _, _ = strings.Cut(strings.TrimLeft(commands, "\n"), "\n\n")
	for _, line := range strings.Split(commands, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			c.commands[f[0]] = true
		}
	}
	for name := range c.commands {
		out, err := exec.Command(abridge, "help", name).Output()
		if err != nil {
			t.Fatalf("abridge help %s: %v", name, err)
		}
		_, fl, _ := strings.Cut(string(out), "\nFlags:\n")
		fl, _, _ = strings.Cut(fl, "\nEnvironment:\n")
		c.flags[name] = map[string]bool{"help": true}
		for _, m := range helpFlagRE.FindAllStringSubmatch(fl, -1) {
			c.flags[name][m[1]] = true
		}
	}
	out, _ := exec.Command(proxyload, "-h").CombinedOutput() // exits 2 after the usage
	c.flags[""] = map[string]bool{}
	for _, m := range helpFlagRE.FindAllStringSubmatch(string(out), -1) {
		c.flags[""][m[1]] = true
	}
	if len(c.flags[""]) == 0 {
		t.Fatalf("proxyload -h lists no flags:\n%s", out)
	}
	return abridge, proxyload, c
}

// checkShell parses every shell block and checks its command lines:
// abridge (or go run ./cmd/abridge) names a subcommand and flags its help
// lists; go run ./cmd/proxyload flags its usage lists; go test names
// existing packages, and its -run, -bench and -fuzz match a function of
// them; go install and go get name a package of the module; a ./ or .ci/
// path exists; variables set are known (see checkNames).
func checkShell(t *testing.T, blocks []block, funcs map[string][]string) {
	goCmd := needGo(t)
	_, _, c := buildCLIs(t, goCmd)
	for _, b := range blocks {
		f, err := syntax.NewParser().Parse(strings.NewReader(b.text), b.String())
		if err != nil {
			t.Errorf("%v does not parse as a shell script: %v", b, err)
			continue
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			call, ok := n.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var args []string
			for _, w := range call.Args {
				args = append(args, literal(w))
			}
			where := fmt.Sprintf("%v, line %d: %s", b, b.line+int(call.Pos().Line()), strings.Join(args, " "))
			for _, err := range checkCommand(args, c, funcs) {
				t.Errorf("%s: %v", where, err)
			}
			return true
		})
	}
}

// literal returns the text of a word whose value needs no expansion, or
// "$" for one that does.
func literal(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "$"
				}
				b.WriteString(l.Value)
			}
		default:
			return "$"
		}
	}
	return b.String()
}

// checkCommand checks one command line's words (see checkShell).
func checkCommand(args []string, c cli, funcs map[string][]string) []error {
	var errs []error
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "./") || strings.HasPrefix(a, ".ci/") {
			p := strings.TrimSuffix(a, "/...")
			if _, err := os.Stat(p); err != nil {
				errs = append(errs, fmt.Errorf("%s does not exist in the repository", a))
			}
		}
	}
	switch {
	case args[0] == "abridge":
		return append(errs, checkAbridge(args[1:], c)...)
	case args[0] != "go" || len(args) < 2:
		return errs
	}
	switch args[1] {
	case "run":
		if len(args) < 3 {
			return append(errs, fmt.Errorf("go run of nothing"))
		}
		switch args[2] {
		case "./cmd/abridge":
			return append(errs, checkAbridge(args[3:], c)...)
		case "./cmd/proxyload":
			return append(errs, checkFlags(args[3:], c.flags[""], "proxyload")...)
		}
		return append(errs, fmt.Errorf("go run of %s: the docs test knows ./cmd/abridge and ./cmd/proxyload", args[2]))
	case "test":
		return append(errs, checkGoTest(args[2:], funcs)...)
	case "install", "get":
		for _, a := range args[2:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			p, _, _ := strings.Cut(a, "@")
			rel, ok := strings.CutPrefix(p, module)
			if _, err := os.Stat("." + rel); !ok || err != nil {
				errs = append(errs, fmt.Errorf("%s names no package of %s", a, module))
			}
		}
		return errs
	case "build":
		return errs
	}
	return append(errs, fmt.Errorf("go %s: the docs test knows go run, test, install, get and build", args[1]))
}

// checkAbridge checks the words after abridge: a subcommand its help
// lists (or --version, --help) and flags that subcommand's help lists.
func checkAbridge(args []string, c cli) []error {
	if len(args) == 0 || args[0] == "--version" || args[0] == "--help" {
		return nil
	}
	sub := args[0]
	if !c.commands[sub] {
		return []error{fmt.Errorf("abridge has no command %q", sub)}
	}
	if sub == "help" && len(args) > 1 && !c.commands[args[1]] {
		return []error{fmt.Errorf("abridge help %s: no such command", args[1])}
	}
	return checkFlags(args[1:], c.flags[sub], "abridge "+sub)
}

// checkFlags checks that each flag among args (up to "--") is one of
// flags.
func checkFlags(args []string, flags map[string]bool, cmd string) []error {
	var errs []error
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !flags[name] {
			errs = append(errs, fmt.Errorf("%s has no flag %s", cmd, a))
		}
	}
	return errs
}

// checkGoTest checks a go test line's packages and the patterns of its
// -run, -bench and -fuzz against the functions of those packages.
func checkGoTest(args []string, funcs map[string][]string) []error {
	var (
		errs     []error
		pkgs     []string
		patterns = map[string]string{}
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if name, ok := strings.CutPrefix(a, "-"); ok {
			name, value, hasValue := strings.Cut(strings.TrimPrefix(name, "-"), "=")
			if (name == "run" || name == "bench" || name == "fuzz") && !hasValue && i+1 < len(args) {
				value, i = args[i+1], i+1
			}
			if name == "run" || name == "bench" || name == "fuzz" {
				patterns[name] = value
			}
			continue
		}
		if a == "." || strings.HasPrefix(a, "./") {
			pkgs = append(pkgs, a)
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	prefixes := map[string]string{"run": "Test", "bench": "Benchmark", "fuzz": "Fuzz"}
	for flag, pattern := range patterns {
		if pattern == "^$" || pattern == "$" {
			continue
		}
		first, _, _ := strings.Cut(pattern, "/")
		re, err := regexp.Compile(first)
		if err != nil {
			errs = append(errs, fmt.Errorf("-%s %q: %v", flag, pattern, err))
			continue
		}
		found := false
		for dir, fs := range funcs {
			if !inPackages(dir, pkgs) {
				continue
			}
			found = found || slices.ContainsFunc(fs, func(f string) bool {
				return strings.HasPrefix(f, prefixes[flag]) && re.MatchString(f)
			})
		}
		if !found {
			errs = append(errs, fmt.Errorf("-%s %q matches no %s function of %s", flag, pattern, prefixes[flag], strings.Join(pkgs, " ")))
		}
	}
	return errs
}

// inPackages reports whether the package in dir is one the patterns name.
func inPackages(dir string, patterns []string) bool {
	for _, p := range patterns {
		p = filepath.Clean(p)
		if base, ok := strings.CutSuffix(p, string(filepath.Separator)+"..."); ok {
			if base == "." || dir == base || strings.HasPrefix(dir, base+string(filepath.Separator)) {
				return true
			}
		} else if p == "..." || dir == p {
			return true
		}
	}
	return false
}

// TestFences checks how the docs test reads the fenced blocks of a page.
func TestFences(t *testing.T) {
	tests := []struct {
		name, page string
		want       []block
		wantErr    bool
	}{
		{"two blocks", "text\n```sh\ngo test ./...\n```\n\n```go title\npackage x\n```\n",
			[]block{{"p.md", 2, "sh", "go test ./...\n"}, {"p.md", 6, "go", "package x\n"}}, false},
		{"no language", "```\nabridge\n```\n", nil, true},
		{"never closed", "```sh\nabridge\n", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fences("p.md", []byte(tc.page))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(block{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestSlug checks the anchors of headings as GitHub makes them.
func TestSlug(t *testing.T) {
	tests := map[string]string{
		"Any client: `abridge serve`":                              "any-client-abridge-serve",
		"The token estimate anchored on the provider's usage":      "the-token-estimate-anchored-on-the-providers-usage",
		"Summaries written ahead, and what deferred requests cost": "summaries-written-ahead-and-what-deferred-requests-cost",
		"Memory and 413s": "memory-and-413s",
	}
	for heading, want := range tests {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestCheckCommand checks that a command line the docs could hold is
// refused when it names what does not exist, against a hand-made help.
func TestCheckCommand(t *testing.T) {
	c := cli{
		commands: map[string]bool{"replay": true, "serve": true, "help": true},
		flags: map[string]map[string]bool{
			"replay": {"wide": true, "mode": true, "help": true},
			"serve":  {"addr": true, "help": true},
			"help":   {"help": true},
			"":       {"latency": true, "bare": true},
		},
	}
	funcs := map[string][]string{"processors/trimtools": {"TestTrim", "FuzzTrimtools", "BenchmarkTrimtools"}}
	tests := []struct {
		line string
		errs int
	}{
		{"abridge replay --wide --mode fresh FILE", 0},
		{"abridge replay FILE --wid", 1},
		{"abridge replay -- --not-a-flag", 0},
		{"abridge sever", 1},
		{"abridge --version", 0},
		{"go run ./cmd/abridge help serve", 0},
		{"go run ./cmd/abridge help sever", 1},
		{"go run ./cmd/proxyload -latency 1s -bare", 0},
		{"go run ./cmd/proxyload -latencyy 1s", 1},
		{"go run ./cmd/nothing", 2},
		{"go test -run ^$ -fuzz FuzzTrimtools ./processors/trimtools", 0},
		{"go test -run ^$ -bench . ./processors/...", 0},
		{"go test -run ^$ -fuzz FuzzTrim ./processors/window", 1},
		{"go test -run TestNope ./processors/trimtools", 1},
		{"go test ./nowhere", 1},
		{"go install github.com/abridge-go/abridge/cmd/abridge@latest", 0},
		{"go install github.com/abridge-go/abridge/cmd/nothing@latest", 1},
		{"go vet ./...", 1},
		{"bash .ci/nothing.sh", 1},
		{"codex exec hello", 0},
	}
	for _, tc := range tests {
		if errs := checkCommand(strings.Fields(tc.line), c, funcs); len(errs) != tc.errs {
			t.Errorf("%s: %d errors, want %d: %v", tc.line, len(errs), tc.errs, errs)
		}
	}
}
