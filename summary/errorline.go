package summary

import "strings"

// errorMarkers are substrings (case-sensitive) that mark a line as an
// error report.
var errorMarkers = []string{"error:", "Error:", "ERROR", "Error ", "Exception", "Traceback", "FAIL", "failed", "Failed",
	"panic:", "fatal:", "Fatal", "No such file", "ermission denied", "not found", "command not found"}

// exitPrefixes start lines that report a command's exit status.
var exitPrefixes = []string{"Exit code ", "exit status ", "<returncode>"}

// ErrorLine returns the first line of s, a tool's output, that reads like
// an error, or "": a line reporting a non-zero exit status ("Exit code 2",
// "exit status 1", "<returncode>1"), completed with the last line of the
// output, or else the line of the first error marker ("error:",
// "Traceback", "FAIL", "not found"...), white space collapsed, clipped to
// 200 bytes (see [Clip]).
func ErrorLine(s string) string {
	mark := len(s) // where the first error marker starts; len(s) when none does
	for _, m := range errorMarkers {
		if i := strings.Index(s, m); i >= 0 && i < mark {
			mark = i
		}
	}
	end := len(s) // the end of the marker's line
	if i := strings.IndexByte(s[mark:], '\n'); i >= 0 {
		end = mark + i
	}
	// An exit status reported up to that line comes first.
	for line := range strings.Lines(s[:end]) {
		if l := strings.TrimSpace(line); exitStatus(l) {
			return exitLine(s, l)
		}
	}
	if mark == len(s) {
		return ""
	}
	start := strings.LastIndexByte(s[:mark], '\n') + 1
	return Clip(collapse(s[start:end]), 200)
}

// exitStatus reports whether the line l (trimmed) reports a non-zero exit
// status.
func exitStatus(l string) bool {
	if l == "" {
		return false
	}
	for _, pre := range exitPrefixes {
		if rest, ok := strings.CutPrefix(l, pre); ok && rest != "" && rest[0] >= '1' && rest[0] <= '9' {
			return true
		}
	}
	return false
}

// exitLine returns the exit status line l of the output s, completed with
// the last line of s (not l, nor a closing tag).
func exitLine(s, l string) string {
	for end := len(s); end > 0; {
		start := strings.LastIndexByte(s[:end], '\n') + 1
		if t := strings.TrimSpace(s[start:end]); t != "" && t != l && !strings.HasPrefix(t, "</") {
			return Clip(collapse(l+" ... "+t), 200)
		}
		end = start - 1
	}
	return Clip(collapse(l), 200)
}
