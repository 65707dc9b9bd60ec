package abridge_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// publicPackages are the packages abridge offers its users: every package
// of the module but the commands, internal/ and the test support under
// testkit/. The replay engine is the CLI's (cmd/abridge/internal/replay),
// not public API.
var publicPackages = []string{
	".", "agent", "compact", "config", "middleware", "model", "model/anthropic",
	"model/openai", "processor", "processor/processortest", "processors/cleartools",
	"processors/trimtools", "processors/window", "processors/window/windowlog",
	"proxy", "receipt", "session", "session/postgres", "session/sqlite", "strategy",
	"summarizer", "summarizer/llm", "summary", "transcript",
}

// TestPublicAPI checks that the public packages are those listed above,
// and logs how many exported identifiers each has (go test -run
// TestPublicAPI -v .), the figure docs/design.md gives: its types,
// functions, variables and constants, the exported methods of its exported
// types, and their exported fields and interface methods, test files
// aside.
func TestPublicAPI(t *testing.T) {
	var public []string
	counts := map[string]int{}
	for _, p := range listPublic(t) {
		public = append(public, p.name)
		n, err := countExported(p.dir, p.files)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		counts[p.name] = n
	}
	sort.Strings(public)
	want := slices.Clone(publicPackages)
	sort.Strings(want)
	if diff := cmp.Diff(want, public); diff != "" {
		t.Errorf("public packages (-want +got):\n%s", diff)
	}
	for _, p := range public {
		t.Logf("%-28s %4d exported identifiers", p, counts[p])
	}
}

// listed is a package of the module as go list names it: its name in the
// module (see moduleName), its directory and its Go files (tests aside).
type listed struct {
	name, dir string
	files     []string
}

// listPublic returns the module's public packages: all but the commands,
// the packages under internal/ and the test support under testkit/.
func listPublic(t *testing.T) []listed {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: skipping")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Dir}}\t{{join .GoFiles \",\"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var public []listed
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "\t")
		if len(fields) != 4 {
			t.Fatalf("go list printed %q", line)
		}
		path, pkgName, dir := fields[0], fields[1], fields[2]
		var files []string
		if fields[3] != "" {
			files = strings.Split(fields[3], ",")
		}
		name, _ := moduleName(path)
		if pkgName == "main" || strings.Contains("/"+name+"/", "/internal/") || strings.HasPrefix(name, "testkit/") {
			continue
		}
		public = append(public, listed{name, dir, files})
	}
	return public
}

// countExported counts the exported identifiers of the package whose Go
// files in dir are files, as TestPublicAPI says.
func countExported(dir string, files []string) (int, error) {
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return 0, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || receiverExported(d.Recv.List[0].Type)) {
					n++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					n += exportedInSpec(s)
				}
			}
		}
	}
	return n, nil
}

// receiverExported reports whether a method's receiver type is exported.
func receiverExported(t ast.Expr) bool {
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

// exportedInSpec counts the exported names a type, variable or constant
// declaration adds: the names, and an exported type's exported fields or
// interface methods.
func exportedInSpec(s ast.Spec) int {
	n := 0
	switch s := s.(type) {
	case *ast.TypeSpec:
		if !s.Name.IsExported() {
			return 0
		}
		n++
		var fields *ast.FieldList
		switch t := s.Type.(type) {
		case *ast.StructType:
			fields = t.Fields
		case *ast.InterfaceType:
			fields = t.Methods
		}
		if fields != nil {
			for _, f := range fields.List {
				for _, id := range f.Names {
					if id.IsExported() {
						n++
					}
				}
			}
		}
	case *ast.ValueSpec:
		for _, id := range s.Names {
			if id.IsExported() {
				n++
			}
		}
	}
	return n
}
