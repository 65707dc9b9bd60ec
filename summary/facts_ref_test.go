package summary

// The facts extraction as it was before it was made fast: every message
// read whole, each call's arguments decoded by encoding/json. The fast
// extraction must give the same sections byte for byte (TestFactsReference).

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// refSection is Facts.Section as the reference computes it.
func refSection(maxChars int, messages []processor.Message, previous string, max int) string {
	if maxChars <= 0 {
		maxChars = DefaultFactsChars
	}
	if max <= 0 || max > maxChars {
		max = maxChars
	}
	s := refParseFacts(previous)
	s.add(refExtractFacts(messages, s, 1<<30))
	return s.render(max)
}

// refFactSet is the content of a facts section, each list oldest first.
type refFactSet struct {
	user, edited, files, commands, errors, names []string
}

// refParseFacts reads the lines of a facts section (without its header).
func refParseFacts(section string) refFactSet {
	var s refFactSet
	var list *[]string // the list "- " lines go to
	for _, line := range strings.Split(section, "\n") {
		switch {
		case line == factsUser:
			list = &s.user
		case line == factsCommands:
			list = &s.commands
		case line == factsErrors:
			list = &s.errors
		case strings.HasPrefix(line, factsEdited):
			s.edited = append(s.edited, refSplitList(line[len(factsEdited):])...)
			list = nil
		case strings.HasPrefix(line, factsFiles):
			s.files = append(s.files, refSplitList(line[len(factsFiles):])...)
			list = nil
		case strings.HasPrefix(line, factsNames):
			s.names = append(s.names, refSplitList(line[len(factsNames):])...)
			list = nil
		case strings.HasPrefix(line, "- ") && list != nil:
			*list = append(*list, line[2:])
		}
	}
	return s
}

func refSplitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ", ") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// add appends the facts of n after those of s, each once (a fact seen
// again moves to the end: it is newer).
func (s *refFactSet) add(n refFactSet) {
	s.user = refAppendNewest(s.user, n.user)
	s.edited = refAppendNewest(s.edited, n.edited)
	s.files = refAppendNewest(s.files, n.files)
	s.commands = refAppendNewest(s.commands, n.commands)
	s.errors = refAppendNewest(s.errors, n.errors)
	s.names = refAppendNewest(s.names, n.names)
	// A file edited is not listed again as read.
	edited := make(map[string]bool, len(s.edited))
	for _, p := range s.edited {
		edited[p] = true
	}
	s.files = refDropIn(s.files, edited)
	files := make(map[string]bool, len(s.files))
	for _, p := range s.files {
		files[p] = true
	}
	s.names = refDropIn(refDropIn(s.names, edited), files)
}

// refAppendNewest returns old followed by new, each entry once at the place
// of its last occurrence.
func refAppendNewest(old, new []string) []string {
	all := append(append(make([]string, 0, len(old)+len(new)), old...), new...)
	out := all[:0]
	if len(all) <= 32 {
		// Few entries: comparing them beats building a map.
		for i, e := range all {
			if e != "" && !slices.Contains(all[i+1:], e) {
				out = append(out, e)
			}
		}
		return out
	}
	last := make(map[string]int, len(all))
	for i, e := range all {
		last[e] = i
	}
	for i, e := range all {
		if e != "" && last[e] == i {
			out = append(out, e)
		}
	}
	return out
}

func refDropIn(list []string, drop map[string]bool) []string {
	out := list[:0:0]
	for _, e := range list {
		if !drop[e] {
			out = append(out, e)
		}
	}
	return out
}

// Shares of a section's bound, in percent, by kind. What one kind leaves
// unused goes to the kinds after it.
var refFactShares = []int{10, 10, 10, 20, 10, 40} // user, edited, files, commands, errors, names

// render writes the section within max characters, the newest entries of
// each kind kept first.
func (s refFactSet) render(max int) string {
	budget := max - len(FactsHeader) - 1
	if budget <= 0 {
		return ""
	}
	type kind struct {
		label string
		items []string
		list  bool // "- " lines rather than one comma-separated line
	}
	kinds := []kind{
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
	wrote := false
	for k, kd := range kinds {
		share := budget*refFactShares[k]/100 + spare
		text, used := refFitNewest(kd.label, kd.items, kd.list, share)
		spare = share - used
		if text != "" {
			b.WriteString("\n")
			b.WriteString(text)
			wrote = true
		}
	}
	if !wrote {
		return ""
	}
	return b.String()
}

// refFitNewest writes label and the newest items that fit in budget
// characters (counting the line break before it), in their order, and
// returns the text and the characters it takes.
func refFitNewest(label string, items []string, list bool, budget int) (string, int) {
	if len(items) == 0 {
		return "", 0
	}
	used := 1 + len(label) // "\n" + label
	if used >= budget {
		return "", 0
	}
	first := len(items)
	for i := len(items) - 1; i >= 0; i-- {
		n := len(items[i]) + 2 // "\n- " less the label's line break, or ", "
		if list {
			n++
		}
		if used+n > budget {
			break
		}
		used += n
		first = i
	}
	if first == len(items) {
		return "", 0
	}
	kept := items[first:]
	if list {
		return label + "\n- " + strings.Join(kept, "\n- "), used
	}
	return label + strings.Join(kept, ", "), used
}

// refExtractFacts returns the facts of messages, oldest first. The files
// read or named, the names and the errors are kept newest first up to
// about limit characters each (what any section within limit can show,
// previous leaving out the files it lists as edited), so those are read
// from the newest message back, and the reading stops once they are full:
// the result renders as the whole extraction would.
func refExtractFacts(messages []processor.Message, previous refFactSet, limit int) refFactSet {
	var s refFactSet
	var edited []string // as found, before cleaning
	type call struct {
		args map[string]any
		keys []string
	}
	calls := map[[2]int]call{} // by message and part index
	for i, m := range messages {
		if IsMarker(m) {
			continue
		}
		for j, part := range m.Parts {
			switch p := part.(type) {
			case processor.UserPrompt:
				if c := collapse(Clip(UserText(p), 1200)); c != "" {
					s.user = append(s.user, Clip(c, 300))
				}
			case processor.ToolCall:
				var args map[string]any
				if json.Unmarshal([]byte(p.Args), &args) != nil {
					args = nil
				}
				keys := refSortedKeys(args)
				calls[[2]int{i, j}] = call{args, keys}
				s.commands = append(s.commands, refCallLine(p, args, keys))
				edited = append(edited, writtenByArgs(p, args)...)
			}
		}
	}
	for _, p := range edited {
		if p = cleanPath(p); p != "" {
			s.edited = append(s.edited, p)
		}
	}
	s.edited = refAppendNewest(nil, s.edited)
	s.user = refAppendNewest(nil, s.user)
	s.commands = refAppendNewest(nil, s.commands)

	allEdited := append(slices.Clone(previous.edited), s.edited...)
	files := refNewestFirst{limit: limit, keep: func(p string) (string, bool) {
		p = cleanPath(p)
		return p, p != "" && !slices.Contains(allEdited, p) && !suffixOf(p, allEdited)
	}}
	names := refNewestFirst{limit: limit}
	errs := refNewestFirst{limit: limit}
	var fs, ns []string // one text's tokens, in order
	tokens := func(text string, withNames bool) {
		fs, ns = fs[:0], ns[:0]
		fs, ns = refAppendTokens(fs, ns, text)
		files.addAll(fs)
		if withNames {
			names.addAll(ns)
		}
	}
	for i := len(messages) - 1; i >= 0 && !(files.full() && names.full() && errs.full()); i-- {
		m := messages[i]
		if IsMarker(m) {
			continue
		}
		for j := len(m.Parts) - 1; j >= 0; j-- {
			switch p := m.Parts[j].(type) {
			case processor.UserPrompt:
				if !files.full() {
					tokens(UserText(p), false)
				}
			case processor.Text:
				if !files.full() || !names.full() {
					tokens(p.Content, true)
				}
			case processor.ToolCall:
				if files.full() && names.full() {
					continue
				}
				c := calls[[2]int{i, j}]
				if c.args == nil {
					tokens(p.Args, true)
					continue
				}
				// The values' tokens in order, then taken newest first.
				fs, ns = fs[:0], ns[:0]
				for _, k := range c.keys {
					refWalkStrings(c.args[k], func(v string) {
						fs, ns = refAppendTokens(fs, ns, v)
					})
				}
				files.addAll(fs)
				names.addAll(ns)
			case processor.ToolReturn:
				if errs.full() {
					continue
				}
				if line := refErrorLine(p.ToolReturnContent()); line != "" {
					if p.ToolName != "" {
						line = p.ToolName + ": " + line
					}
					errs.add(line)
				}
			case processor.RetryPrompt:
				if t := collapse(p.Content); t != "" && !errs.full() {
					errs.add(Clip(t, 200))
				}
			}
		}
	}
	s.files, s.names, s.errors = files.oldestFirst(), names.oldestFirst(), errs.oldestFirst()
	return s
}

// refNewestFirst collects distinct entries, newest first (each at its last
// occurrence), until they take limit characters.
type refNewestFirst struct {
	limit int
	keep  func(string) (string, bool) // nil: every entry, as it is
	seen  map[string]bool
	items []string
	chars int
}

func (c *refNewestFirst) full() bool { return c.chars >= c.limit }

// add adds e, older than the entries added before it.
func (c *refNewestFirst) add(e string) {
	if c.keep != nil {
		var ok bool
		if e, ok = c.keep(e); !ok {
			return
		}
	}
	if e == "" || c.seen[e] {
		return
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[e] = true
	c.items = append(c.items, e)
	c.chars += len(e) + 3 // its separator, or "\n- "
}

// addAll adds es, in their order (so the last is the newest), older than
// the entries added before them.
func (c *refNewestFirst) addAll(es []string) {
	for k := len(es) - 1; k >= 0 && !c.full(); k-- {
		c.add(es[k])
	}
}

// oldestFirst returns the entries, oldest first.
func (c *refNewestFirst) oldestFirst() []string {
	slices.Reverse(c.items)
	return c.items
}

// refWalkStrings calls fn with every string value in v, in the order of the
// object keys (sorted) and array elements.
func refWalkStrings(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case []any:
		for _, e := range x {
			refWalkStrings(e, fn)
		}
	case map[string]any:
		for _, k := range refSortedKeys(x) {
			refWalkStrings(x[k], fn)
		}
	}
}

// refSortedKeys returns the keys of m, sorted.
func refSortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Bounds of a call's line in the facts.
const (
	refMaxArgChars  = 200 // a longer argument value is shown as its size
	refMaxCallChars = 240 // a longer line is cut, "…" marking the cut
)

// refCallLine renders a tool call as "name: value; value", its string,
// number and boolean arguments (args, decoded, with its keys sorted; nil
// when they are not a JSON object: the raw text is shown) in the order of
// their names, the
// telling one (a command, a path) first, whitespace collapsed, a value
// over refMaxArgChars shown as its size (as file contents written are); the
// line is cut at refMaxCallChars.
func refCallLine(c processor.ToolCall, args map[string]any, sorted []string) string {
	var line string
	if args == nil {
		line = c.ToolName + ": " + collapse(c.Args)
	} else {
		keys := slices.Clone(sorted)
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
				if len(v) > 4*refMaxArgChars {
					vals = append(vals, "("+strconv.Itoa(len(v))+" characters)")
					continue
				}
				switch v = collapse(v); {
				case len(v) > refMaxArgChars:
					vals = append(vals, "("+strconv.Itoa(len(v))+" characters)")
				case v != "":
					vals = append(vals, v)
				}
			case float64, bool:
				b, _ := json.Marshal(v)
				vals = append(vals, string(b))
			}
		}
		line = c.ToolName + ": " + strings.Join(vals, "; ")
	}
	if len(line) > refMaxCallChars {
		line = line[:runeFloor(line, refMaxCallChars-len("…"))] + "…"
	}
	return line
}

// refAppendTokens appends to files the path-like tokens of text (as
// pathTokens finds them) and to names its code names: identifiers of at
// least 4 bytes with an underscore or a capital after a lower-case letter
// (read_config, FileStorage), and dotted names whose segments are all
// identifiers, with a last segment that is not a file extension
// (os.path.join, settings.DEBUG), outside paths. It reads text once.
func refAppendTokens(files, names []string, text string) ([]string, []string) {
	for i := 0; i < len(text); {
		if !isPathByte(text[i]) {
			i++
			continue
		}
		// One pass over the run notes what the rules need: most words
		// have no dot, slash, underscore or capital, and are left at once.
		j := i
		var class uint8
		for ; j < len(text); j++ {
			c := byteClass[text[j]]
			if c&classPath == 0 {
				break
			}
			class |= c
		}
		dot, slash, mark := class&classDot != 0, class&classSlash != 0, class&classMark != 0
		run := text[i:j]
		i = j
		if dot || slash {
			if p := pathToken(run); p != "" {
				files = append(files, p)
			}
		}
		if slash || !dot && !mark {
			continue // a path's segments are no names; a plain word is none
		}
		for k := 0; k < len(run); {
			m := k
			for m < len(run) && (isNameByte(run[m]) || run[m] == '.') {
				m++
			}
			if name, ok := refCodeName(strings.Trim(run[k:m], ".")); ok {
				names = append(names, name)
			}
			k = m + 1
		}
	}
	return files, names
}

// refCodeName reports whether tok (a run of name bytes and dots, no dot at
// either end) is a code name worth keeping.
func refCodeName(tok string) (string, bool) {
	if tok == "" || len(tok) > 80 {
		return "", false
	}
	dot := strings.LastIndexByte(tok, '.')
	if dot < 0 {
		return tok, isCodeIdent(tok)
	}
	if knownExt[strings.ToLower(tok[dot+1:])] || len(tok) < 4 {
		return "", false
	}
	// Every segment is led by a letter or an underscore.
	for i := 0; i < len(tok); i++ {
		if i == 0 || tok[i-1] == '.' {
			if c := tok[i]; c == '.' || !(c == '_' || isLetterByte(c)) {
				return "", false
			}
		}
	}
	return tok, true
}

// refErrorLine is errorLine as it was: it returns the first line of s that reads like an error, or "".
// A bare exit status is completed with the last line of the output.
func refErrorLine(s string) string {
	// One pass finds the first marker, and the lines starting with an exit
	// prefix before it; most outputs hold neither.
	mark := len(s)
	exits := false
scan:
	for i := 0; i+1 < len(s); i++ {
		for _, m := range markersAt[s[i]] {
			if !strings.HasPrefix(s[i:], m) {
				continue
			}
			if slices.Contains(exitPrefixes, m) {
				exits = true
				continue
			}
			mark = i
			break scan
		}
	}
	return errorLineAt(s, mark, exits)
}

// errorLineAt is refErrorLine once its first error marker is found at
// mark (len(s) when there is none), exits telling whether a line before it
// may start with an exit prefix: an exit status line before the marker
// wins, else the marker's line.
func errorLineAt(s string, mark int, exits bool) string {
	for start := 0; exits && start < len(s) && start <= mark; {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		if l := strings.TrimSpace(s[start:end]); exitStatus(l) {
			return exitLine(s, l)
		}
		start = end + 1
	}
	return markLine(s, mark)
}

// refShellMayWrite is shellMayWrite as it was, the quotes and backslashes
// taken out of a copy of the command.
func refShellMayWrite(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '>' && (i+1 == len(s) || s[i+1] != '&' || i > 0 && s[i-1] == '>') {
			return true
		}
	}
	if refHasWritingCommand(s) {
		return true
	}
	if !strings.ContainsAny(s, `'"\`) {
		return false
	}
	return refHasWritingCommand(strings.Map(func(r rune) rune {
		if r == '\'' || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s))
}

// refHasWritingCommand is hasWritingCommand as it was, a search for each
// command.
func refHasWritingCommand(s string) bool {
	for _, w := range []string{"sed", "perl", "tee", "touch", "truncate", "cp", "mv", "install", "ln", "rsync"} {
		for rest, at := s, 0; ; {
			i := strings.Index(rest, w)
			if i < 0 {
				break
			}
			i += at
			end := i + len(w)
			if (i == 0 || s[i-1] != '_' && !isLetterByte(s[i-1])) && (end == len(s) || !isWordByte(s[end])) {
				return true
			}
			at = i + 1
			rest = s[at:]
		}
	}
	return false
}
