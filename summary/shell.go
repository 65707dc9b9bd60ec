package summary

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellWritten returns the files a shell command writes, in the order of
// the command: the targets of its output redirections (not a descriptor
// it duplicates, nor a device under /dev/), and the files of the commands
// that write the files they name (see commandWrites). The command is read
// by a Bash parser; of one it cannot parse (an unclosed quote or
// here-document, a command cut short), the lines before the first that
// does not parse on its own are read as above (the lines after it may be
// inside its quote or here-document).
func shellWritten(cmd string) []string {
	if out, ok := parsedWritten(cmd); ok {
		return out
	}
	var out []string
	for line := range strings.Lines(cmd) {
		w, ok := parsedWritten(line)
		if !ok {
			break
		}
		out = append(out, w...)
	}
	return out
}

// parsedWritten is shellWritten of a command the parser reads, and false
// when it cannot.
func parsedWritten(cmd string) ([]string, bool) {
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil, false
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			for _, r := range n.Redirs {
				if t, ok := redirectTarget(cmd, r); ok {
					out = append(out, t)
				}
			}
		case *syntax.CallExpr:
			words := make([]string, len(n.Args))
			for i, w := range n.Args {
				words[i] = wordText(cmd, w)
			}
			out = append(out, commandWrites(words)...)
		}
		return true
	})
	return out, true
}

// redirectTarget returns the file an output redirection writes, and
// whether it writes one: >, >>, >|, &>, &>>, <>, and >& to a word that
// is not a descriptor (bash reads `>& file` as `&> file`).
func redirectTarget(src string, r *syntax.Redirect) (string, bool) {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll,
		syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut, syntax.DplOut:
	default:
		return "", false
	}
	t := wordText(src, r.Word)
	if r.Op == syntax.DplOut && (t == "-" || isDigits(t)) || t == "" || strings.HasPrefix(t, "/dev/") {
		return "", false
	}
	return t, true
}

// wordText returns a word as the command it is part of means it: quotes
// and escapes removed; what the shell would expand (a parameter, a
// command substitution) is left as written.
func wordText(src string, w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		writePart(&b, src, p, false)
	}
	return b.String()
}

// writePart writes a word's part to b as wordText reads it (quoted: the
// part is in double quotes).
func writePart(b *strings.Builder, src string, p syntax.WordPart, quoted bool) {
	switch p := p.(type) {
	case *syntax.Lit:
		b.WriteString(unescape(p.Value, quoted))
	case *syntax.SglQuoted:
		b.WriteString(p.Value)
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			writePart(b, src, q, true)
		}
	default:
		b.WriteString(src[p.Pos().Offset():p.End().Offset()])
	}
}

// unescape removes the escaping backslashes of a literal: outside double
// quotes each escapes the byte after it; inside, only one before $, `, ",
// \ or a line break does. An escaped line break is removed with its
// backslash.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!quoted || strings.IndexByte("$`\"\\\n", s[i+1]) >= 0) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// commandWrites returns the files a simple command (its words, quotes
// removed) writes by naming them: the files of sed -i and perl -i (not
// their script), every operand of tee, touch and truncate, and the
// destination of cp, mv, install, ln and rsync (their last operand).
// Leading assignments and sudo, env and command are passed over.
func commandWrites(words []string) []string {
	for len(words) > 0 && (strings.Contains(words[0], "=") || words[0] == "sudo" || words[0] == "env" || words[0] == "command") {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil
	}
	name, args := path.Base(words[0]), words[1:]
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
			if name == "sed" && a == "-i" && i+1 < len(args) && args[i+1] == "" {
				i++ // BSD sed's backup suffix, none: sed -i '' script file
			}
			switch {
			case name == "sed" && (a == "-e" || a == "-f" || a == "--expression" || a == "--file"),
				name == "perl" && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "e"):
				script = true
				i++ // the script, or its file
			case name == "sed" && (strings.HasPrefix(a, "--expression=") || strings.HasPrefix(a, "--file=")):
				script = true
			case name == "truncate" && (a == "-s" || a == "-r"):
				i++ // the size, or the reference file
			}
		default:
			operands = append(operands, a)
		}
	}
	var written []string
	switch name {
	case "sed", "perl":
		if !inPlace {
			return nil
		}
		if !script && len(operands) > 0 {
			operands = operands[1:] // the script itself
		}
		written = operands
	case "tee", "touch", "truncate":
		written = operands
	case "cp", "mv", "install", "ln", "rsync":
		if len(operands) >= 2 {
			written = operands[len(operands)-1:]
		}
	}
	// An empty word names no file.
	return slices.DeleteFunc(written, func(w string) bool { return w == "" })
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
