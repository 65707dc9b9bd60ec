package summary

import (
	"encoding/json"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
)

// Paths returns the file paths seen in messages, each once, in order of
// first appearance. written holds the paths a tool call wrote, edited,
// created, moved or copied to: file-editing tools (their path arguments,
// patch headers) and shell commands (redirections, sed -i, perl -i, tee,
// touch, cp, mv). mentioned holds every other path-like token of the user
// prompts, assistant text, tool arguments and then tool results: tokens
// with a known file extension, or absolute and relative paths ("/etc/x",
// "./x", "~/x") of at least two segments. It is deterministic.
func Paths(messages []processor.Message) (written, mentioned []string) {
	seenW := map[string]bool{}
	addW := func(p string) {
		p = cleanPath(p)
		if p == "" || seenW[p] {
			return
		}
		seenW[p] = true
		written = append(written, p)
	}
	var first, late []string // mentioned in prompts and calls; in tool results
	for _, m := range messages {
		for _, part := range m.Parts {
			switch p := part.(type) {
			case processor.ToolCall:
				for _, w := range writtenByCall(p) {
					addW(w)
				}
				first = append(first, pathTokens(p.Args)...)
			case processor.UserPrompt:
				first = append(first, pathTokens(UserText(p))...)
			case processor.Text:
				first = append(first, pathTokens(p.Content)...)
			case processor.ToolReturn:
				late = append(late, pathTokens(p.ToolReturnContent())...)
			case processor.RetryPrompt:
				late = append(late, pathTokens(p.Content)...)
			}
		}
	}
	seenM := map[string]bool{}
	for _, p := range append(first, late...) {
		if p = cleanPath(p); p == "" || seenW[p] || seenM[p] || suffixOf(p, written) {
			continue
		}
		seenM[p] = true
		mentioned = append(mentioned, p)
	}
	return written, mentioned
}

// suffixOf reports whether p is a relative path that ends one of the paths
// in ps (the same file named from another directory).
func suffixOf(p string, ps []string) bool {
	if strings.HasPrefix(p, "/") {
		return false
	}
	p = strings.TrimPrefix(p, "./")
	for _, q := range ps {
		if len(q) > len(p) && q[len(q)-len(p)-1] == '/' && strings.HasSuffix(q, p) {
			return true
		}
	}
	return false
}

// pathKeys are argument names that hold a file path.
var pathKeys = []string{"path", "file_path", "filepath", "file", "filename", "file_name", "target_file", "notebook_path", "target", "dest", "destination", "new_path", "old_path"}

// commandKeys are argument names that hold a shell command.
var commandKeys = []string{"command", "cmd", "script", "shell", "bash"}

// writtenByCall returns the paths a tool call writes.
func writtenByCall(c processor.ToolCall) []string {
	var args map[string]any
	if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
		args = nil
	}
	return writtenByArgs(c, args)
}

// writtenByArgs returns the paths a tool call writes, given its arguments
// decoded (nil when they are not a JSON object).
func writtenByArgs(c processor.ToolCall, args map[string]any) []string {
	if args == nil {
		// Not an object: a raw command or patch.
		if strings.Contains(c.Args, "*** ") || strings.Contains(c.Args, "+++ ") {
			return patchPaths(c.Args)
		}
		return nil
	}
	name := strings.ToLower(c.ToolName)
	var out []string
	if writesFiles(name, args) {
		for _, k := range pathKeys {
			if s, ok := args[k].(string); ok {
				out = append(out, s)
			}
		}
		if edits, ok := args["edits"].([]any); ok {
			for _, e := range edits {
				if e, ok := e.(map[string]any); ok {
					for _, k := range pathKeys {
						if s, ok := e[k].(string); ok {
							out = append(out, s)
						}
					}
				}
			}
		}
	}
	for _, v := range args {
		if s, ok := v.(string); ok && (strings.Contains(s, "*** Add File:") || strings.Contains(s, "*** Update File:") || strings.Contains(s, "\n+++ ") || strings.HasPrefix(s, "+++ ") || strings.HasPrefix(s, "--- ")) {
			out = append(out, patchPaths(s)...)
		}
	}
	for _, k := range commandKeys {
		if s, ok := args[k].(string); ok {
			out = append(out, shellWritten(s)...)
		}
	}
	return out
}

// writesFiles reports whether a tool of this name, with these arguments,
// writes the files its path arguments name.
func writesFiles(name string, args map[string]any) bool {
	if cmd, ok := args["command"].(string); ok {
		switch cmd {
		case "create", "str_replace", "insert", "undo_edit", "write", "edit", "append", "replace":
			return true
		case "view", "read":
			return false
		}
	}
	for _, w := range []string{"write", "edit", "create", "replace", "insert", "patch", "append", "save", "update_file", "modify", "delete", "remove", "move", "rename"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// patchPaths returns the files a patch adds, updates or moves to.
func patchPaths(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, prefix := range []string{"*** Add File: ", "*** Update File: ", "*** Move to: ", "+++ b/", "+++ "} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				rest = strings.TrimSpace(rest)
				if i := strings.IndexByte(rest, '\t'); i >= 0 {
					rest = rest[:i]
				}
				if rest != "/dev/null" && rest != "" {
					out = append(out, rest)
				}
				break
			}
		}
	}
	return out
}

// shellWritten returns the files a shell command writes: redirection
// targets, and the files of sed -i, perl -i, tee, touch, cp and mv (see
// shellWriter).
func shellWritten(cmd string) []string {
	var w shellWriter
	return w.appendWritten(nil, cmd)
}

// word is one token of a shell command: a word (quotes removed) or an
// operator.
type word struct {
	s  string
	op bool
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// cleanPath trims a path found by a heuristic and rejects what is not a
// file path worth keeping.
func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	p = strings.Trim(p, "\"'`,;:()[]{}<>")
	switch {
	case p == "", p == "-", strings.HasPrefix(p, "/dev/"), strings.HasPrefix(p, "$"),
		strings.ContainsAny(p, "*?\n"), strings.Contains(p, "://"):
		return ""
	}
	return p
}

// isPathByte reports whether c may be part of a path-like token: an ASCII
// letter or digit or one of _ ~ . / @ + -.
func isPathByte(c byte) bool { return byteClass[c]&classPath != 0 }

// isNameByte reports whether c may be part of a code name: an ASCII letter
// or digit or an underscore.
func isNameByte(c byte) bool { return byteClass[c]&className != 0 }

// Byte classes, looked up in byteClass: a byte may be in a path, in a
// name, and be a dot, a slash, a mark of a code name (an underscore or a
// capital), or another path byte (~ @ + -).
const (
	classPath = 1 << iota
	className
	classDot
	classSlash
	classMark
	classOther // a path byte that is neither in a name nor a dot or a slash
)

var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		switch {
		case 'a' <= b && b <= 'z' || '0' <= b && b <= '9':
			t[c] = classPath | className
		case 'A' <= b && b <= 'Z' || b == '_':
			t[c] = classPath | className | classMark
		}
	}
	for _, b := range []byte("~@+-") {
		t[b] = classPath | classOther
	}
	t['.'] = classPath | classDot
	t['/'] = classPath | classSlash
	return t
}()

// pathTokens returns the path-like tokens of text, in order: the maximal
// runs of path bytes (see isPathByte) that look like paths.
func pathTokens(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		if !isPathByte(text[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(text) && isPathByte(text[j]) {
			j++
		}
		if t := pathToken(text[i:j]); t != "" {
			out = append(out, t)
		}
		i = j
	}
	return out
}

// pathToken returns run (a maximal run of path bytes), its trailing dots
// and dashes trimmed, when it looks like a path, or "".
func pathToken(run string) string {
	e := len(run)
	for e > 0 && (run[e-1] == '.' || run[e-1] == '-') {
		e--
	}
	t := run[:e]
	if len(t) < 3 || strings.IndexByte(t, '.') < 0 && strings.IndexByte(t, '/') < 0 {
		return "" // no path without a dot or a slash
	}
	if strings.HasPrefix(t, "//") || strings.HasPrefix(t, "@") || strings.HasSuffix(t, "/") || !looksLikePath(t) {
		return ""
	}
	return t
}

// looksLikePath reports whether t has a known file extension, or is an
// absolute, home or dot-relative path of at least two segments.
func looksLikePath(t string) bool {
	if ext := path.Ext(t); len(ext) > 1 && isKnownExt(ext[1:]) {
		base := path.Base(t)
		return len(base) > len(ext) && !strings.HasPrefix(base, "_")
	}
	if rest, ok := strings.CutPrefix(t, "/"); ok {
		return strings.Contains(strings.Trim(rest, "/"), "/")
	}
	for _, pre := range []string{"./", "../", "~/"} {
		if rest, ok := strings.CutPrefix(t, pre); ok {
			return rest != ""
		}
	}
	return false
}

// isKnownExt reports whether strings.ToLower(ext) is in knownExt. An ASCII
// ext is lowered on the stack, and rejected at once when it is longer than
// every known extension; one of at most 8 bytes is looked up as a word in
// extTable, a longer one in knownExt. Any other (whose lower case may be
// shorter, or ASCII: the Kelvin sign lowers to 'k') goes through
// strings.ToLower.
func isKnownExt(ext string) bool {
	var b [maxExtLen]byte
	var k uint64 // ext lowered as a word, its first byte lowest, when it fits
	for i := 0; i < len(ext); i++ {
		c := ext[i]
		switch {
		case c >= utf8.RuneSelf:
			return knownExt[strings.ToLower(ext)]
		case i >= maxExtLen:
			continue // too long, unless a later byte is not ASCII
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c == 0:
			return false // in no known extension (nor told apart in a word)
		}
		b[i] = c
		k |= uint64(c) << (8 * (i & 7))
	}
	switch {
	case len(ext) == 0 || len(ext) > maxExtLen:
		return false
	case len(ext) > 8:
		return knownExt[string(b[:len(ext)])]
	}
	for i := extSlot(k); ; i = (i + 1) % extSlots {
		switch extTable[i] {
		case k:
			return true
		case 0:
			return false
		}
	}
}

// extTable holds the extensions of knownExt of at most 8 bytes, each as a
// word (its first byte lowest, zeros after its last) at the first free
// slot from extSlot of it on: a lookup compares words, not strings.
var extTable = func() (t [extSlots]uint64) {
	for e := range knownExt {
		if len(e) > 8 {
			continue
		}
		var k uint64
		for i := 0; i < len(e); i++ {
			k |= uint64(e[i]) << (8 * i)
		}
		i := extSlot(k)
		for t[i] != 0 {
			i = (i + 1) % extSlots
		}
		t[i] = k
	}
	return t
}()

// extSlots is the size of extTable, about four times the extensions it
// holds: most lookups read one slot.
const extSlots = 512

// extSlot is the slot of extTable a word is looked for from.
func extSlot(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 >> (64 - 9) }

// maxExtLen is the length of the longest extension in knownExt (checked
// by a test).
const maxExtLen = 10

// knownExt lists the file extensions that mark a token as a path, in
// lower case.
var knownExt = func() map[string]bool {
	m := map[string]bool{}
	for _, e := range strings.Fields(`go mod sum py pyi pyx js mjs cjs jsx ts tsx vue svelte rb rs java kt kts scala
		c h cc cpp cxx hpp hh m mm swift cs fs php pl pm lua r jl dart zig nim ex exs erl hrl elm clj hs ml
		sh bash zsh fish ps1 bat cmd sql graphql proto thrift
		json jsonl yaml yml toml ini cfg conf env properties xml html htm css scss sass less svg
		md markdown rst txt adoc org tex csv tsv log lock patch diff diffs
		ipynb dockerfile makefile gradle cmake mk tf hcl nix bzl bazel
		png jpg jpeg gif pdf zip tar gz tgz whl jar so dll a o db sqlite`) {
		m[e] = true
	}
	return m
}()

// shellWriter finds the files shell commands write (redirection targets,
// and the files of sed -i, perl -i, tee, touch, cp, mv and the like), in
// buffers it reuses from one command to the next: each simple command is
// read as soon as it ends, and a word that holds no quote or backslash is a
// slice of the command rather than a copy. It is a heuristic, not a shell
// parser; here-document bodies are skipped.
type shellWriter struct {
	seg      []word   // the simple command being read
	words    []string // its words without redirections
	operands []string // its operands (see appendCommandWrites)
	tok      []byte   // the word being read
	inTok    bool     // a word is being read
	plain    bool     // the word is cmd[start:start+len(tok)]
	start    int
	heredocs []string
}

// appendWritten appends to out the files cmd writes, in the order of the
// command.
func (w *shellWriter) appendWritten(out []string, cmd string) []string {
	w.seg, w.tok, w.inTok, w.heredocs = w.seg[:0], w.tok[:0], false, w.heredocs[:0]
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(cmd[i+1:], c)
			if j < 0 {
				j = len(cmd) - i - 1
			}
			w.tok = append(w.tok, cmd[i+1:i+1+j]...)
			w.inTok, w.plain = true, false
			i += j + 1
		case c == '\\' && i+1 < len(cmd):
			w.tok = append(w.tok, cmd[i+1])
			w.inTok, w.plain = true, false
			i++
		case c == ' ' || c == '\t':
			w.flush(cmd)
		case c == '\n':
			out = w.endSeg(out, cmd)
			if len(w.heredocs) > 0 {
				// Skip the bodies of the here-documents opened on this line.
				rest := cmd[i+1:]
				for _, delim := range w.heredocs {
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
				w.heredocs = w.heredocs[:0]
				i = len(cmd) - len(rest) - 1
			}
		case c == ';' || c == '|' || c == '&' || c == '(' || c == ')':
			if c == '&' && i+1 < len(cmd) && cmd[i+1] == '>' {
				// &> or &>>: redirect both streams.
				w.flush(cmd)
				continue
			}
			out = w.endSeg(out, cmd)
		case c == '<':
			w.flush(cmd)
			if strings.HasPrefix(cmd[i:], "<<<") {
				i += 2
				w.seg = append(w.seg, word{s: "<<<", op: true})
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
				if delim := strings.Trim(cmd[j:k], `'"\`); delim != "" {
					w.heredocs = append(w.heredocs, delim)
				}
				i = k - 1
				continue
			}
			w.seg = append(w.seg, word{s: "<", op: true})
		case c == '>':
			// A file descriptor number right before > belongs to it.
			if w.inTok && isDigits(string(w.tok)) {
				w.tok = w.tok[:0]
				w.inTok = false
			}
			w.flush(cmd)
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
			w.seg = append(w.seg, word{s: op, op: true})
		default:
			if !w.inTok {
				w.start, w.plain = i, true
			}
			w.tok = append(w.tok, c)
			w.inTok = true
		}
	}
	return w.endSeg(out, cmd)
}

// flush ends the word being read, if any.
func (w *shellWriter) flush(cmd string) {
	if !w.inTok {
		return
	}
	var s string
	if w.plain {
		s = cmd[w.start : w.start+len(w.tok)]
	} else {
		// A word with quotes or backslashes, whose start may be that of
		// a word before it, or of another command.
		s = string(w.tok)
	}
	w.seg = append(w.seg, word{s: s})
	w.tok, w.inTok = w.tok[:0], false
}

// endSeg ends the simple command being read, appending to out the files
// it writes.
func (w *shellWriter) endSeg(out []string, cmd string) []string {
	w.flush(cmd)
	seg := w.seg
	w.seg = w.seg[:0]
	if len(seg) == 0 {
		return out
	}
	for i := 0; i+1 < len(seg); i++ {
		if seg[i].op && (seg[i].s == ">" || seg[i].s == ">>") && !seg[i+1].op {
			out = append(out, seg[i+1].s)
		}
	}
	words := w.words[:0] // the command's words without redirections
	for i := 0; i < len(seg); i++ {
		if seg[i].op {
			i++ // skip the redirection's target
			continue
		}
		words = append(words, seg[i].s)
	}
	w.words = words
	for len(words) > 0 && (strings.Contains(words[0], "=") || words[0] == "sudo" || words[0] == "env" || words[0] == "command") {
		words = words[1:]
	}
	if len(words) == 0 {
		return out
	}
	return w.appendCommandWrites(out, path.Base(words[0]), words[1:])
}

// appendCommandWrites appends to out the files one simple command, name
// and its arguments args, writes.
func (w *shellWriter) appendCommandWrites(out []string, name string, args []string) []string {
	operands := w.operands[:0]
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
	w.operands = operands
	switch name {
	case "sed", "perl":
		if !inPlace {
			return out
		}
		if !script && len(operands) > 0 {
			operands = operands[1:] // the script itself
		}
		return append(out, operands...)
	case "tee", "touch", "truncate":
		return append(out, operands...)
	case "cp", "mv", "install", "ln", "rsync":
		if len(operands) >= 2 {
			return append(out, operands[len(operands)-1])
		}
	}
	return out
}

// release empties w's buffers, which then hold no string of the commands
// read.
func (w *shellWriter) release() {
	clear(w.seg[:cap(w.seg)])
	clear(w.words[:cap(w.words)])
	clear(w.operands[:cap(w.operands)])
	clear(w.heredocs[:cap(w.heredocs)])
	w.seg, w.words, w.operands, w.heredocs, w.tok = w.seg[:0], w.words[:0], w.operands[:0], w.heredocs[:0], w.tok[:0]
}
