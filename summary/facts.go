package summary

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// FactsHeader starts the facts section of a summary (see [Facts]).
const FactsHeader = "Facts kept verbatim from the condensed messages (newest last):"

// DefaultFactsChars is the size bound of a facts section when
// [FactsOptions.MaxChars] is 0.
const DefaultFactsChars = 2000

// The labels of the facts section's lines, in the order they are written.
const (
	factsUser     = "User said:"
	factsEdited   = "Files edited: "
	factsFiles    = "Files read or named: "
	factsCommands = "Commands and tool calls:"
	factsErrors   = "Errors met:"
	factsNames    = "Names used: "
)

// FactsOptions configures [Facts]. The zero value means all defaults.
type FactsOptions struct {
	// MaxChars bounds the facts section, header included; 0 means
	// DefaultFactsChars (2000).
	MaxChars int
}

// Facts writes the facts section a summary carries beside its prose: what
// a person handing the work over would copy exactly rather than retell,
// taken from the messages deterministically and kept verbatim:
//
//   - the user's messages (clipped to 300 characters each);
//   - the files tool calls edited, and the other files the user, the
//     assistant's text and its calls read or named;
//   - the commands and tool calls the assistant made (a line each, at most
//     240 characters, an argument over 200 characters shown by its size);
//   - the errors the tools reported (the first error line of each output);
//   - the names the assistant used in its own words and calls: identifiers
//     with an underscore or an inner capital, and dotted qualified names.
//
// The section is rolling: it merges the facts of a previous section
// (carried by the summary being merged, see [SplitFacts]) with those of the
// new messages, and when it would pass its bound the oldest entries of each
// kind go first. Each kind has its share of the bound (user 10%, files
// edited 10%, files read 10%, commands 20%, errors 10%, names 40%; what one
// leaves unused goes to those after it), so one kind cannot crowd out the
// others. A Facts is safe for concurrent use.
type Facts struct {
	maxChars int
}

// NewFacts returns a Facts.
func NewFacts(opts FactsOptions) *Facts {
	n := opts.MaxChars
	if n <= 0 {
		n = DefaultFactsChars
	}
	return &Facts{maxChars: n}
}

// factSet is the content of a facts section, each list oldest first.
type factSet struct {
	user, edited, files, commands, errors, names []string
}

// Section returns the facts section of messages merged with previous (the
// facts section of an earlier summary, as [SplitFacts] returns it, or ""),
// within max characters (at most the Facts' own bound; a section that
// cannot hold its header and one fact is ""). It is "" when there is no
// fact at all.
func (f *Facts) Section(messages []processor.Message, previous string, max int) string {
	if max <= 0 || max > f.maxChars {
		max = f.maxChars
	}
	s := parseFacts(previous)
	s.add(extractFacts(messages, s.edited))
	return s.render(max)
}

// SplitFacts splits a summary into its prose and its facts section (""
// when it has none). A summary made by joining several (merged markers)
// may hold several sections: their lines are returned together, in order.
func SplitFacts(summary string) (prose, facts string) {
	i := strings.Index(summary, FactsHeader)
	if i < 0 {
		return summary, ""
	}
	var rest, sections []string
	rest = append(rest, summary[:i])
	for i >= 0 {
		summary = summary[i+len(FactsHeader):]
		// A section runs to the next blank line (or the end).
		end := strings.Index(summary, "\n\n")
		if end < 0 {
			end = len(summary)
		}
		sections = append(sections, strings.Trim(summary[:end], "\n"))
		summary = summary[end:]
		i = strings.Index(summary, FactsHeader)
		if i < 0 {
			rest = append(rest, summary)
		} else {
			rest = append(rest, summary[:i])
		}
	}
	var texts []string
	for _, r := range rest {
		if r = strings.TrimSpace(r); r != "" {
			texts = append(texts, r)
		}
	}
	return strings.Join(texts, "\n\n"), strings.Join(sections, "\n")
}

// WithFacts returns prose followed by a blank line and the facts section
// (prose alone when facts is empty).
func WithFacts(prose, facts string) string {
	prose = strings.TrimSpace(prose)
	if facts == "" {
		return prose
	}
	if prose == "" {
		return facts
	}
	return prose + "\n\n" + facts
}

// parseFacts reads the lines of a facts section (without its header).
func parseFacts(section string) factSet {
	var s factSet
	var list *[]string // the list "- " lines go to
	for line := range strings.SplitSeq(section, "\n") {
		switch {
		case line == factsUser:
			list = &s.user
		case line == factsCommands:
			list = &s.commands
		case line == factsErrors:
			list = &s.errors
		case strings.HasPrefix(line, factsEdited):
			s.edited = appendList(s.edited, line[len(factsEdited):])
			list = nil
		case strings.HasPrefix(line, factsFiles):
			s.files = appendList(s.files, line[len(factsFiles):])
			list = nil
		case strings.HasPrefix(line, factsNames):
			s.names = appendList(s.names, line[len(factsNames):])
			list = nil
		case strings.HasPrefix(line, "- ") && list != nil:
			*list = append(*list, line[2:])
		}
	}
	return s
}

// appendList appends to out the entries of the comma-separated list s,
// white space trimmed, the empty ones left out.
func appendList(out []string, s string) []string {
	for e := range strings.SplitSeq(s, ", ") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// add appends the facts of n after those of s, each once (a fact seen
// again moves to the end: it is newer).
func (s *factSet) add(n factSet) {
	s.user = appendNewest(s.user, n.user)
	s.edited = appendNewest(s.edited, n.edited)
	s.files = appendNewest(s.files, n.files)
	s.commands = appendNewest(s.commands, n.commands)
	s.errors = appendNewest(s.errors, n.errors)
	s.names = appendNewest(s.names, n.names)
	// A file edited is not listed again as read, nor a file as a name.
	s.files = without(s.files, s.edited)
	s.names = without(without(s.names, s.edited), s.files)
}

// appendNewest returns old followed by new, each entry once at the place
// of its last occurrence, the empty ones left out.
func appendNewest(old, new []string) []string {
	all := append(slices.Clip(old), new...)
	last := make(map[string]int, len(all))
	for i, e := range all {
		last[e] = i
	}
	var out []string
	for i, e := range all {
		if e != "" && last[e] == i {
			out = append(out, e)
		}
	}
	return out
}

// without returns the entries of list that are not in drop.
func without(list, drop []string) []string {
	dropped := make(map[string]bool, len(drop))
	for _, e := range drop {
		dropped[e] = true
	}
	var out []string
	for _, e := range list {
		if !dropped[e] {
			out = append(out, e)
		}
	}
	return out
}

// Shares of a section's bound, in percent, by kind. What one kind leaves
// unused goes to the kinds after it.
var factShares = []int{10, 10, 10, 20, 10, 40} // user, edited, files, commands, errors, names

// render writes the section within max characters, the newest entries of
// each kind kept first.
func (s factSet) render(max int) string {
	budget := max - len(FactsHeader) - 1
	if budget <= 0 {
		return ""
	}
	kinds := []struct {
		label string
		items []string
		list  bool // "- " lines rather than one comma-separated line
	}{
		{factsUser, s.user, true},
		{factsEdited, s.edited, false},
		{factsFiles, s.files, false},
		{factsCommands, s.commands, true},
		{factsErrors, s.errors, true},
		{factsNames, s.names, false},
	}
	var b strings.Builder
	b.WriteString(FactsHeader)
	spare := 0
	for k, kd := range kinds {
		share := budget*factShares[k]/100 + spare
		kept, used := newestWithin(kd.label, kd.items, kd.list, share)
		spare = share - used
		if len(kept) == 0 {
			continue
		}
		b.WriteString("\n" + kd.label)
		if kd.list {
			b.WriteString("\n- " + strings.Join(kept, "\n- "))
		} else {
			b.WriteString(strings.Join(kept, ", "))
		}
	}
	if b.Len() == len(FactsHeader) {
		return "" // no fact
	}
	return b.String()
}

// newestWithin returns the newest items that fit with label in budget
// characters (a line break before the label, and each item's separator:
// "\n- " in a list, ", " on a line), in their order, and the characters
// they take with the label (0 when none fits).
func newestWithin(label string, items []string, list bool, budget int) ([]string, int) {
	used := 1 + len(label)
	if len(items) == 0 || used >= budget {
		return nil, 0
	}
	sep := len(", ")
	if list {
		sep = len("\n- ")
	}
	first := len(items)
	for first > 0 && used+len(items[first-1])+sep <= budget {
		first--
		used += len(items[first]) + sep
	}
	if first == len(items) {
		return nil, 0
	}
	return items[first:], used
}

// extractFacts returns the facts of messages, oldest first, as found (an
// entry may come more than once, or be "": add keeps each once, at its
// last place); markers are passed over. The files read or named leave out
// the files edited, by the messages or in previousEdited.
func extractFacts(messages []processor.Message, previousEdited []string) factSet {
	var s factSet
	var edited, files []string // as found, before cleaning
	addTokens := func(text string, withNames bool) {
		fs, ns := tokens(text)
		files = append(files, fs...)
		if withNames {
			s.names = append(s.names, ns...)
		}
	}
	for _, m := range messages {
		if IsMarker(m) {
			continue
		}
		for _, part := range m.Parts {
			switch p := part.(type) {
			case processor.UserPrompt:
				text := UserText(p)
				if c := collapse(Clip(text, 1200)); c != "" {
					s.user = append(s.user, Clip(c, 300))
				}
				addTokens(text, false)
			case processor.Text:
				addTokens(p.Content, true)
			case processor.ToolCall:
				args := decodeArgs(p.Args)
				s.commands = append(s.commands, callLine(p, args))
				edited = append(edited, writtenByArgs(p, args)...)
				texts := []string{p.Args}
				if args != nil {
					texts = stringValues(args, nil)
				}
				for _, t := range texts {
					addTokens(t, true)
				}
			case processor.ToolReturn:
				if line := ErrorLine(p.ToolReturnContent()); line != "" {
					if p.ToolName != "" {
						line = p.ToolName + ": " + line
					}
					s.errors = append(s.errors, line)
				}
			case processor.RetryPrompt:
				if t := collapse(p.Content); t != "" {
					s.errors = append(s.errors, Clip(t, 200))
				}
			}
		}
	}
	for _, p := range edited {
		s.edited = append(s.edited, cleanPath(p))
	}
	allEdited := append(slices.Clip(previousEdited), s.edited...)
	for _, p := range files {
		if p = cleanPath(p); !slices.Contains(allEdited, p) && !suffixOf(p, allEdited) {
			s.files = append(s.files, p)
		}
	}
	// An entry stays on its line (a clipped text's note is written between
	// spaces, not line breaks), so that the next section reads it back.
	for _, list := range [][]string{s.user, s.commands, s.errors} {
		for i, e := range list {
			list[i] = strings.ReplaceAll(e, "\n", " ")
		}
	}
	return s
}

// stringValues appends to out the strings in v, in the order of the
// object keys (sorted) and array elements.
func stringValues(v any, out []string) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			out = stringValues(e, out)
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			out = stringValues(v[k], out)
		}
	}
	return out
}

// tokens returns the path-like tokens of text (as pathTokens finds them)
// and its code names: identifiers of at least 4 bytes with an underscore
// or a capital after a lower-case letter (read_config, FileStorage), and
// dotted names whose segments are all identifiers, with a last segment
// that is not a file extension (os.path.join, settings.DEBUG), outside
// paths.
func tokens(text string) (files, names []string) {
	for run := range pathRuns(text) {
		var dot, slash, mark bool
		for i := 0; i < len(run); i++ {
			switch c := run[i]; {
			case c == '.':
				dot = true
			case c == '/':
				slash = true
			case c == '_' || 'A' <= c && c <= 'Z':
				mark = true
			}
		}
		if dot || slash {
			if t := pathToken(run); t != "" {
				files = append(files, t)
			}
		}
		if slash || !dot && !mark {
			continue // a path's segments are no names; a name has a dot, an underscore or a capital
		}
		for seg := range strings.FieldsFuncSeq(run, func(r rune) bool { return r != '.' && !isNameByte(byte(r)) }) {
			if name, ok := codeName(strings.Trim(seg, ".")); ok {
				names = append(names, name)
			}
		}
	}
	return files, names
}

// codeName reports whether tok (a run of name bytes and dots, no dot at
// either end) is a code name worth keeping.
func codeName(tok string) (string, bool) {
	if tok == "" || len(tok) > 80 {
		return "", false
	}
	dot := strings.LastIndexByte(tok, '.')
	if dot < 0 {
		return tok, isCodeIdent(tok)
	}
	if len(tok) < 4 || knownExt[strings.ToLower(tok[dot+1:])] {
		return "", false
	}
	// Every segment is led by a letter or an underscore.
	for seg := range strings.SplitSeq(tok, ".") {
		if seg == "" || !(seg[0] == '_' || isLetter(seg[0])) {
			return "", false
		}
	}
	return tok, true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// isCodeIdent reports whether s is an identifier of at least 4 bytes, led
// by a letter or underscore, with an inner underscore or a capital after
// a lower-case letter.
func isCodeIdent(s string) bool {
	if len(s) < 4 || !(s[0] == '_' || isLetter(s[0])) {
		return false
	}
	letters := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLetter(c) {
			letters = true
		}
		if i > 0 && c == '_' && i < len(s)-1 {
			return letters || isLetter(s[i+1])
		}
		if i > 0 && 'A' <= c && c <= 'Z' && 'a' <= s[i-1] && s[i-1] <= 'z' {
			return true
		}
	}
	return false
}

// Bounds of a call's line in the facts.
const (
	maxArgChars  = 200 // a longer argument value is shown as its size
	maxCallChars = 240 // a longer line is cut, "…" marking the cut
)

// callLine renders a tool call as "name: value; value": its string,
// number and boolean arguments (args, decoded; nil when they are not a
// JSON object, and the raw text is shown) in the order of their names,
// the telling one (a command, a path) first, white space collapsed, a
// value over maxArgChars shown as its size (as file contents written
// are); the line is cut at maxCallChars.
func callLine(c processor.ToolCall, args map[string]any) string {
	var line string
	if args == nil {
		line = c.ToolName + ": " + collapse(c.Args)
	} else {
		keys := sortedKeys(args)
		for _, want := range argKeys {
			if i := slices.Index(keys, want); i >= 0 {
				keys[0], keys[i] = keys[i], keys[0]
				break
			}
		}
		var vals []string
		for _, k := range keys {
			switch v := args[k].(type) {
			case string:
				// A value over 4 times the bound is not collapsed first.
				if len(v) <= 4*maxArgChars {
					v = collapse(v)
				}
				if len(v) > maxArgChars {
					vals = append(vals, "("+strconv.Itoa(len(v))+" characters)")
				} else if v != "" {
					vals = append(vals, v)
				}
			case float64, bool:
				b, _ := json.Marshal(v)
				vals = append(vals, string(b))
			}
		}
		line = c.ToolName + ": " + strings.Join(vals, "; ")
	}
	if len(line) > maxCallChars {
		line = line[:runeFloor(line, maxCallChars-len("…"))] + "…"
	}
	return line
}
