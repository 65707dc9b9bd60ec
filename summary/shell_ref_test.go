package summary

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// refShellWritten is shellWritten as first written: the command split
// into simple commands of words first (refShellSegments), then each read.
// FuzzShellWritten checks shellWriter against it.
func refShellWritten(cmd string) []string {
	var out []string
	for _, seg := range refShellSegments(cmd) {
		for i := 0; i+1 < len(seg); i++ {
			if seg[i].op && (seg[i].s == ">" || seg[i].s == ">>") && !seg[i+1].op {
				out = append(out, seg[i+1].s)
			}
		}
		var words []string // the command's words without redirections
		for i := 0; i < len(seg); i++ {
			if seg[i].op {
				i++ // skip the redirection's target
				continue
			}
			words = append(words, seg[i].s)
		}
		for len(words) > 0 && (strings.Contains(words[0], "=") || words[0] == "sudo" || words[0] == "env" || words[0] == "command") {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		out = append(out, refCommandWrites(path.Base(words[0]), words[1:])...)
	}
	return out
}

// refCommandWrites returns the files one simple command writes.
func refCommandWrites(name string, args []string) []string {
	var operands []string
	inPlace, script := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
		case strings.HasPrefix(a, "-"):
			if strings.HasPrefix(a, "-i") || a == "--in-place" || (name == "perl" && strings.Contains(a, "i")) {
				inPlace = true
			}
			takesScript := a == "-e" || a == "-f" || a == "--expression" || a == "--file" ||
				(name == "perl" && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "e"))
			if takesScript {
				script = true
				i++ // the option's value
			}
			if strings.HasPrefix(a, "--expression=") || strings.HasPrefix(a, "--file=") {
				script = true
			}
		default:
			operands = append(operands, a)
		}
	}
	switch name {
	case "sed", "perl":
		if !inPlace {
			return nil
		}
		if !script && len(operands) > 0 {
			operands = operands[1:] // the script itself
		}
		return operands
	case "tee", "touch", "truncate":
		return operands
	case "cp", "mv", "install", "ln", "rsync":
		if len(operands) >= 2 {
			return operands[len(operands)-1:]
		}
	}
	return nil
}

// refShellSegments splits a shell command into simple commands (at newlines,
// ;, &, |, && and ||), each a list of words and redirection operators.
// Here-document bodies are skipped. It is a heuristic, not a shell parser.
func refShellSegments(cmd string) [][]word {
	var segs [][]word
	var cur []word
	var tok []byte // the word being read; each word is copied out of it
	inTok := false
	var heredocs []string
	flush := func() {
		if inTok {
			cur = append(cur, word{s: string(tok)})
			tok = tok[:0]
			inTok = false
		}
	}
	endSeg := func() {
		flush()
		if len(cur) > 0 {
			segs = append(segs, cur)
		}
		cur = nil
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(cmd[i+1:], c)
			if j < 0 {
				j = len(cmd) - i - 1
			}
			tok = append(tok, cmd[i+1:i+1+j]...)
			inTok = true
			i += j + 1
		case c == '\\' && i+1 < len(cmd):
			tok = append(tok, cmd[i+1])
			inTok = true
			i++
		case c == ' ' || c == '\t':
			flush()
		case c == '\n':
			endSeg()
			if len(heredocs) > 0 {
				// Skip the bodies of the here-documents opened on this line.
				rest := cmd[i+1:]
				for _, delim := range heredocs {
					for {
						line, after, found := strings.Cut(rest, "\n")
						rest = after
						if strings.TrimSpace(line) == delim || !found {
							if !found {
								rest = ""
							}
							break
						}
					}
				}
				heredocs = nil
				i = len(cmd) - len(rest) - 1
			}
		case c == ';' || c == '|' || c == '&' || c == '(' || c == ')':
			if c == '&' && i+1 < len(cmd) && cmd[i+1] == '>' {
				// &> or &>>: redirect both streams.
				flush()
				continue
			}
			endSeg()
		case c == '<':
			flush()
			if strings.HasPrefix(cmd[i:], "<<<") {
				i += 2
				cur = append(cur, word{s: "<<<", op: true})
				continue
			}
			if strings.HasPrefix(cmd[i:], "<<") {
				i++
				if i+1 < len(cmd) && cmd[i+1] == '-' {
					i++
				}
				// Read the delimiter word.
				j := i + 1
				for j < len(cmd) && (cmd[j] == ' ' || cmd[j] == '\t') {
					j++
				}
				k := j
				for k < len(cmd) && cmd[k] != ' ' && cmd[k] != '\t' && cmd[k] != '\n' && cmd[k] != ';' && cmd[k] != '>' && cmd[k] != '|' {
					k++
				}
				delim := strings.Trim(cmd[j:k], `'"\`)
				if delim != "" {
					heredocs = append(heredocs, delim)
				}
				i = k - 1
				continue
			}
			cur = append(cur, word{s: "<", op: true})
		case c == '>':
			// A file descriptor number right before > belongs to it.
			if inTok && isDigits(string(tok)) {
				tok = tok[:0]
				inTok = false
			}
			flush()
			op := ">"
			if i+1 < len(cmd) && cmd[i+1] == '>' {
				op = ">>"
				i++
			}
			if i+1 < len(cmd) && (cmd[i+1] == '&' || cmd[i+1] == '|') {
				// >&2 duplicates a descriptor; >| forces.
				if cmd[i+1] == '&' {
					i++
					for i+1 < len(cmd) && (cmd[i+1] >= '0' && cmd[i+1] <= '9' || cmd[i+1] == '-') {
						i++
					}
					continue
				}
				i++
			}
			cur = append(cur, word{s: op, op: true})
		default:
			tok = append(tok, c)
			inTok = true
		}
	}
	endSeg()
	return segs
}

// FuzzShellWritten checks that shellWritten (a shellWriter) finds the
// files refShellWritten finds, in the same order, and that a writer reused
// from one command to the next finds them too.
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
	} {
		f.Add(s, "rsync -a x y > z")
	}
	f.Fuzz(func(t *testing.T, cmd, next string) {
		want := refShellWritten(cmd)
		if got := shellWritten(cmd); !slices.Equal(got, want) {
			t.Fatalf("shellWritten(%q) = %q, want %q", cmd, got, want)
		}
		var w shellWriter
		w.appendWritten(nil, next)
		if got := w.appendWritten(nil, cmd); !slices.Equal(got, want) {
			t.Fatalf("a shellWriter used for %q, then for %q: %q, want %q", next, cmd, got, want)
		}
	})
}
