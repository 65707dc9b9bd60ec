package fidelity

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Bounds of the tokens [AppendTokens] finds.
const (
	minPath       = 4   // bytes of a path or qualified name
	minIdentifier = 6   // bytes of an identifier
	minDigits     = 4   // digits of a number
	minQuoted     = 6   // characters between a pair of quotes
	maxQuoted     = 120 //
)

// AppendTokens appends the distinctive tokens of text to dst and returns
// the extended slice; a token found twice is appended twice. The tokens
// are:
//
//   - paths and qualified names: a longest run of ASCII letters, digits and
//     the bytes _ . / - with its leading and trailing . / - cut off, when it
//     still holds a '.' or a '/' and a letter and is 4 bytes or longer
//     (django/core/files/storage.py, os.path.join);
//   - identifiers: a piece of such a run between . / - that begins with a
//     letter or '_', is 6 bytes or longer, holds a letter, and holds an
//     underscore or both a lower-case letter and an upper-case one after its
//     first byte (FILE_UPLOAD_PERMISSIONS, FileSystemStorage; not README,
//     Django);
//   - numbers: such a piece made of 4 digits or more;
//   - quoted strings: what stands between a ", ' or ` and the next same
//     quote on the same line, when it is 6 to 120 characters long and holds
//     a letter; a ' right after a letter or digit opens nothing, and one
//     right before a letter or digit closes nothing (apostrophes, as in
//     it's).
//
// Tokens are whole strings: a truncated path, storage.py within a longer
// path, or 1234 within 12345 are other tokens.
func AppendTokens(dst []string, text string) []string {
	for i := 0; i < len(text); {
		if !inRun(text[i]) {
			i++
			continue
		}
		end := i + 1
		for end < len(text) && inRun(text[end]) {
			end++
		}
		dst = appendRun(dst, text[i:end])
		i = end
	}
	return appendQuotes(dst, text)
}

// inRun reports whether c belongs to a path's run of bytes.
func inRun(c byte) bool {
	return isAlnum(c) || c == '_' || c == '.' || c == '/' || c == '-'
}

// isSeparator reports whether c separates the pieces of a run.
func isSeparator(c byte) bool { return c == '.' || c == '/' || c == '-' }

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isLetter(c) || isDigit(c) }

// appendRun appends the tokens of one run: the run itself when it is a
// path, then its pieces that are identifiers or numbers.
func appendRun(dst []string, run string) []string {
	lo, hi := 0, len(run)
	for lo < hi && isSeparator(run[lo]) {
		lo++
	}
	for hi > lo && isSeparator(run[hi-1]) {
		hi--
	}
	run = run[lo:hi]
	if isPath(run) {
		dst = append(dst, run)
	}
	for len(run) > 0 {
		piece := run
		if k := indexSeparator(run); k >= 0 {
			piece, run = run[:k], run[k+1:]
		} else {
			run = ""
		}
		if isIdentifier(piece) || isNumber(piece) {
			dst = append(dst, piece)
		}
	}
	return dst
}

func indexSeparator(s string) int {
	for k := 0; k < len(s); k++ {
		if isSeparator(s[k]) {
			return k
		}
	}
	return -1
}

// isPath reports whether a trimmed run is a path or qualified name.
func isPath(run string) bool {
	if len(run) < minPath {
		return false
	}
	slashOrDot, letter := false, false
	for k := 0; k < len(run); k++ {
		switch c := run[k]; {
		case c == '.' || c == '/':
			slashOrDot = true
		case isLetter(c):
			letter = true
		}
	}
	return slashOrDot && letter
}

func isIdentifier(s string) bool {
	if len(s) < minIdentifier || !isLetter(s[0]) && s[0] != '_' {
		return false
	}
	var underscore, letter, lower, innerUpper bool
	for k := 0; k < len(s); k++ {
		c := s[k]
		underscore = underscore || c == '_'
		letter = letter || isLetter(c)
		lower = lower || 'a' <= c && c <= 'z'
		innerUpper = innerUpper || k > 0 && 'A' <= c && c <= 'Z'
	}
	return letter && (underscore || lower && innerUpper)
}

func isNumber(s string) bool {
	if len(s) < minDigits {
		return false
	}
	for k := 0; k < len(s); k++ {
		if !isDigit(s[k]) {
			return false
		}
	}
	return true
}

// appendQuotes appends the quoted strings of text. An opening quote takes
// the first closing one on its line, and the pair is passed over whether
// or not what it encloses is a token.
func appendQuotes(dst []string, text string) []string {
	for i := 0; i < len(text); i++ {
		q := text[i]
		if q != '"' && q != '\'' && q != '`' || q == '\'' && i > 0 && isAlnum(text[i-1]) {
			continue
		}
		end := closingQuote(text, i+1, q)
		if end < 0 {
			continue
		}
		inner := text[i+1 : end]
		if n := utf8.RuneCountInString(inner); n >= minQuoted && n <= maxQuoted && hasLetter(inner) {
			dst = append(dst, inner)
		}
		i = end
	}
	return dst
}

// closingQuote returns the index of the quote q that closes one opened
// before from, on the same line, or -1.
func closingQuote(text string, from int, q byte) int {
	for j := from; j < len(text) && text[j] != '\n'; j++ {
		if text[j] != q {
			continue
		}
		if q == '\'' && j+1 < len(text) && isAlnum(text[j+1]) {
			continue
		}
		return j
	}
	return -1
}

func hasLetter(s string) bool {
	for k := 0; k < len(s); k++ {
		if isLetter(s[k]) {
			return true
		}
	}
	return false
}

// AppendArgumentTokens appends the tokens of a tool call's arguments: those
// of the string and number values of the JSON value they begin with (the
// keys are the tool's schema, not what the model wrote), or those of the
// whole text when it does not begin with a JSON value.
func AppendArgumentTokens(dst []string, args string) []string {
	if args == "" {
		return dst
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(args)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return AppendTokens(dst, args)
	}
	return appendValueTokens(dst, v)
}

// appendValueTokens appends the tokens of every string and number in v,
// each tokenized on its own.
func appendValueTokens(dst []string, v any) []string {
	switch v := v.(type) {
	case string:
		dst = AppendTokens(dst, v)
	case json.Number:
		dst = AppendTokens(dst, v.String())
	case []any:
		for _, e := range v {
			dst = appendValueTokens(dst, e)
		}
	case map[string]any:
		for _, e := range v {
			dst = appendValueTokens(dst, e)
		}
	}
	return dst
}
