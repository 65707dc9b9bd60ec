package summary

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestShellWritten(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		want      []string
	}{
		{"redirections", "echo a > out.txt; echo b >> log/all.log; echo c >| forced.txt; make &> build.log; make &>> build.log", []string{"out.txt", "log/all.log", "forced.txt", "build.log", "build.log"}},
		// The hand reader reported /dev/null for 2>/dev/null.
		{"no device, no descriptor", "ls 2>/dev/null; go test ./... 2>&1 | tail; echo x >&2; echo y 1>&-", nil},
		{">& to a file writes it", "ls >& all.txt", []string{"all.txt"}},
		{"a descriptor before > is not a file", "run 2> errors.txt", []string{"errors.txt"}},
		{"tee, touch, truncate", "go test | tee -a t1.log t2.log && touch a b && truncate -s 0 c", []string{"t1.log", "t2.log", "a", "b", "c"}},
		{"sed -i and perl -i", "sed -i 's/a/b/' x.go y.go; sed -i -e s/a/b/ -e s/c/d/ z.go; sed 's/a/b/' read.go; perl -pi -e 's/x/y/' lib/z.pl", []string{"x.go", "y.go", "z.go", "lib/z.pl"}},
		{"BSD sed -i with an empty backup suffix", "sed -i '' 's/a/b/' x.go", []string{"x.go"}},
		// A fuzz input: '' is the file operand, and names no file.
		{"an empty word is no file", "sed 0 -i ''; touch '' t", []string{"t"}},
		{"copies and moves", "cp a.tmpl config/app.yaml && mv -f a.tmp b.json && install -m 644 x /usr/bin/x && ln -s a b", []string{"config/app.yaml", "b.json", "/usr/bin/x", "b"}},
		{"assignments, sudo, env", "FOO=1 sudo env BAR=2 mv a b/c", []string{"b/c"}},
		{"quotes and escapes", `tee "my file.txt" 'other one.txt' with\ space.txt "a\"b.txt"`, []string{"my file.txt", "other one.txt", "with space.txt", `a"b.txt`}},
		// The hand reader took an escaped quote inside double quotes for
		// the closing one, and listed `name"/d django/db/models/constraints.py`.
		{"escaped quote in double quotes", `sed -i -e "/\"verbose name\"/d" django/db/models/constraints.py`, []string{"django/db/models/constraints.py"}},
		{"escaped quotes in a script", `sed -i "s/print(f\"x {y.get(\\\"user\\\")}\")/z/" reproduce_issue.py`, []string{"reproduce_issue.py"}},
		{"here-document body is not read", "cat > notes.md <<'EOF'\nline > not_a_file.txt\nEOF\necho done", []string{"notes.md"}},
		// The hand reader took a continued line's break for the first word
		// of the command after it, and so missed it.
		{"continued lines", "mkdir app && \\\ntouch app/__init__.py && \\\nsed -i s/a/b/ app/x.py", []string{"app/__init__.py", "app/x.py"}},
		{"commands inside substitutions and groups", "x=$(sed -i s/a/b/ f.go); (cd d && make > log.txt); { echo; } > grouped.txt", []string{"f.go", "log.txt", "grouped.txt"}},
		{"expansions kept as written", `tee "$OUT" out_$i.txt`, []string{"$OUT", "out_$i.txt"}},
		// bash itself refuses this command (a quote inside single quotes):
		// it writes nothing, and its words are not files.
		{"unparsable: nothing from the bad line", "sed -i '1c\\    # Don\\'t show it' f.py", nil},
		{"unparsable: the lines before the bad one are read", "echo ok > first.txt\necho \"unclosed\necho > inside_the_quote.txt", []string{"first.txt"}},
		// Its first line does not parse on its own either: nothing is read
		// (bash would still write notes.md), and its body is not read as
		// commands.
		{"unclosed here-document", "cat > notes.md <<EOF\necho > not_a_file.txt", nil},
		{"not shell", "edit 4:4\ndef division(a: float, b: float) -> float:\nend_of_edit", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, shellWritten(tc.cmd), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("shellWritten(%q) (-want +got):\n%s", tc.cmd, diff)
			}
		})
	}
}

// isSubsequence reports whether the bytes of sub appear in s in order.
func isSubsequence(sub, s string) bool {
	for i := 0; i < len(sub); i++ {
		j := strings.IndexByte(s, sub[i])
		if j < 0 {
			return false
		}
		s = s[j+1:]
	}
	return true
}

// shellWritten never panics, and each file it finds is a non-empty
// subsequence of the command (quotes and escapes only removed), outside
// /dev/, and not a bare descriptor.
func FuzzShellWritten(f *testing.F) {
	for _, s := range []string{
		"go test ./... 2>&1 | tail",
		"cat > out.txt <<'EOF'\nx\nEOF\necho y >> log.txt",
		"t'e'e x.log && sed -i 's/a/b/' f.go; perl -pi -e 's/x/y/' g.pl",
		"c\\p a b",
		"echo x >\"&f\" | tee -a t1 t2",
		"FOO=1 sudo env command mv a b/c; install -m 644 x /usr/bin/x",
		"ls >& /dev/null; grep -r x . 2>/dev/null > found.txt",
		"sed --in-place --expression=s/a/b/ h.go && touch i j",
		"echo $'a\\tb' > $'f\\tg'; tee <(cat) >(tee x)",
		"f() { echo > in_func.txt; }; case x in x) touch c;; esac",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		for _, w := range shellWritten(cmd) {
			if w == "" || strings.HasPrefix(w, "/dev/") || !isSubsequence(w, cmd) {
				t.Fatalf("shellWritten(%q) found %q", cmd, w)
			}
		}
	})
}
