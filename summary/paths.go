package summary

import (
	"encoding/json"
	"iter"
	"path"
	"slices"
	"strings"
	"unicode"

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
				for _, w := range writtenByArgs(p, decodeArgs(p.Args)) {
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

// decodeArgs returns a tool call's arguments decoded, or nil when they
// are not a JSON object.
func decodeArgs(raw string) map[string]any {
	var args map[string]any
	if json.Unmarshal([]byte(raw), &args) != nil {
		return nil
	}
	return args
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
	var out []string
	if writesFiles(strings.ToLower(c.ToolName), args) {
		out = append(out, pathArgs(args)...)
		if edits, ok := args["edits"].([]any); ok {
			for _, e := range edits {
				if e, ok := e.(map[string]any); ok {
					out = append(out, pathArgs(e)...)
				}
			}
		}
	}
	for _, k := range sortedKeys(args) {
		if s, ok := args[k].(string); ok && isPatch(s) {
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

// pathArgs returns the string values of args under pathKeys, in their
// order.
func pathArgs(args map[string]any) []string {
	var out []string
	for _, k := range pathKeys {
		if s, ok := args[k].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// isPatch reports whether s reads as a patch: it adds or updates a file
// ("*** Add File:", "*** Update File:"), or has a unified diff's header.
func isPatch(s string) bool {
	return strings.Contains(s, "*** Add File:") || strings.Contains(s, "*** Update File:") ||
		strings.Contains(s, "\n+++ ") || strings.HasPrefix(s, "+++ ") || strings.HasPrefix(s, "--- ")
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeWords are the words of a tool's name that make writesFiles true.
var writeWords = []string{"write", "edit", "create", "replace", "insert", "patch", "append", "save", "update_file", "modify", "delete", "remove", "move", "rename"}

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
	for _, w := range writeWords {
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

// cleanPath trims a path found by a heuristic and rejects what is not a
// file path worth keeping: a device, a variable, a pattern, a URL, or a
// text holding a line break or the ", " that separates the paths of a
// list (the facts' and the digest's, which are read back).
func cleanPath(p string) string {
	// Quotes and white space in any order: `" a.go` is a.go.
	p = strings.TrimFunc(p, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("\"'`,;:()[]{}<>", r) })
	switch {
	case p == "", p == "-", strings.HasPrefix(p, "/dev/"), strings.HasPrefix(p, "$"),
		strings.ContainsAny(p, "*?\n"), strings.Contains(p, "://"), strings.Contains(p, ", "):
		return ""
	}
	return p
}

// isNameByte reports whether c may be part of a code name: an ASCII letter
// or digit or an underscore.
func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// isPathByte reports whether c may be part of a path-like token: a name
// byte or one of ~ . / @ + -.
func isPathByte(c byte) bool {
	return isNameByte(c) || c == '~' || c == '.' || c == '/' || c == '@' || c == '+' || c == '-'
}

// pathRuns returns the maximal runs of path bytes of text, in order.
func pathRuns(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := 0; i < len(text); {
			if !isPathByte(text[i]) {
				i++
				continue
			}
			j := i + 1
			for j < len(text) && isPathByte(text[j]) {
				j++
			}
			if !yield(text[i:j]) {
				return
			}
			i = j
		}
	}
}

// pathTokens returns the path-like tokens of text, in order: the maximal
// runs of path bytes (see isPathByte) that look like paths.
func pathTokens(text string) []string {
	var out []string
	for run := range pathRuns(text) {
		if t := pathToken(run); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// pathToken returns run (a maximal run of path bytes), its trailing dots
// and dashes trimmed, when it looks like a path, or "".
func pathToken(run string) string {
	if strings.IndexByte(run, '.') < 0 && strings.IndexByte(run, '/') < 0 {
		return "" // no path without a dot or a slash
	}
	t := strings.TrimRight(run, ".-")
	if len(t) < 3 || strings.IndexByte(t, '.') < 0 && strings.IndexByte(t, '/') < 0 {
		return ""
	}
	if strings.HasPrefix(t, "//") || strings.HasPrefix(t, "@") || strings.HasSuffix(t, "/") || !looksLikePath(t) {
		return ""
	}
	return t
}

// looksLikePath reports whether t has a known file extension, or is an
// absolute, home or dot-relative path of at least two segments.
func looksLikePath(t string) bool {
	if ext := path.Ext(t); len(ext) > 1 && knownExt[strings.ToLower(ext[1:])] {
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
