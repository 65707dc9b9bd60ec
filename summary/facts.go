package summary

import (
	"encoding/json"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

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
	x := getScratch()
	defer x.release()
	s := parseFacts(previous, x)
	s.add(extractFacts(messages, s, max, x), x)
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

// parseFacts reads the lines of a facts section (without its header), its
// lists grown from those of x.
func parseFacts(section string, x *factsScratch) factSet {
	p := &x.parsed
	s := factSet{user: p[0][:0], edited: p[1][:0], files: p[2][:0], commands: p[3][:0], errors: p[4][:0], names: p[5][:0]}
	defer func() { *p = [6][]string{s.user, s.edited, s.files, s.commands, s.errors, s.names} }()
	var list *[]string // the list "- " lines go to
	for rest, more := section, true; more; {
		var line string
		line, rest, more = strings.Cut(rest, "\n")
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
// white space trimmed, the empty ones left out (out, from the pooled
// scratch, is most often grown already: s is not counted first).
func appendList(out []string, s string) []string {
	for more := true; more; {
		var e string
		e, s, more = strings.Cut(s, ", ")
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// add appends the facts of n after those of s, each once (a fact seen
// again moves to the end: it is newer), the lists made in x.
func (s *factSet) add(n factSet, x *factsScratch) {
	s.user = x.appendNewest(s.user, n.user)
	s.edited = x.appendNewest(s.edited, n.edited)
	s.files = x.appendNewest(s.files, n.files)
	s.commands = x.appendNewest(s.commands, n.commands)
	s.errors = x.appendNewest(s.errors, n.errors)
	s.names = x.appendNewest(s.names, n.names)
	// A file edited is not listed again as read.
	s.files = x.dropAll(s.files, s.edited)
	s.names = x.dropAll(x.dropAll(s.names, s.edited), s.files)
}

// dropAll returns list without the entries in drop, filtered in place
// (every caller passes a list of its own): against up to 256 entries by
// comparing only the entries of list whose fingerprint one of them has,
// against more through x's map.
func (x *factsScratch) dropAll(list, drop []string) []string {
	if len(drop) == 0 || len(list) == 0 {
		return list
	}
	if len(drop) <= 256 {
		// Only an entry whose fingerprint one of drop has needs comparing.
		var m printSet
		for _, e := range drop {
			m.set(fingerprint(e))
		}
		out := list[:0]
		for _, e := range list {
			if !m.has(fingerprint(e)) || !slices.Contains(drop, e) {
				out = append(out, e)
			}
		}
		return out
	}
	m := x.drop
	for _, p := range drop {
		m[p] = true
	}
	list = dropIn(list, m)
	clear(m)
	return list
}

// appendNewest returns old followed by new, each entry once at the place
// of its last occurrence: a list made in x.
func (x *factsScratch) appendNewest(old, new []string) []string {
	a := len(x.lists)
	x.lists = append(append(x.lists, old...), new...)
	all := x.lists[a:]
	out := all[:0]
	if len(all) <= 256 {
		// Not too many entries: comparing them beats building a map, and
		// only an entry whose fingerprint another has needs comparing.
		var once, twice printSet
		for _, e := range all {
			h := fingerprint(e)
			if once.has(h) {
				twice.set(h)
			}
			once.set(h)
		}
		for i, e := range all {
			if e != "" && (!twice.has(fingerprint(e)) || !slices.Contains(all[i+1:], e)) {
				out = append(out, e)
			}
		}
	} else {
		lp := lastPool.Get().(*map[string]int)
		last := *lp
		for i, e := range all {
			last[e] = i
		}
		for i, e := range all {
			if e != "" && last[e] == i {
				out = append(out, e)
			}
		}
		if len(last) <= scratchMax {
			clear(last)
			lastPool.Put(lp)
		}
	}
	x.lists = x.lists[:a+len(out)]
	return out[:len(out):len(out)]
}

// printSet flags fingerprints of strings (see fingerprint): a string
// whose fingerprint is not flagged is none of them, without comparing it
// to each.
type printSet [32]uint64

// fingerprint returns 11 bits of a string, from its length and three of
// its bytes: equal strings have the same.
func fingerprint(e string) uint {
	n := len(e)
	if n == 0 {
		return 0
	}
	h := uint64(n) | uint64(e[0])<<16 | uint64(e[n/2])<<24 | uint64(e[n-1])<<32
	return uint((h * 0x9E3779B97F4A7C15) >> 53)
}

// set flags the fingerprint h.
func (m *printSet) set(h uint) { m[h>>6] |= 1 << (h & 63) }

// has reports whether the fingerprint h is flagged.
func (m *printSet) has(h uint) bool { return m[h>>6]&(1<<(h&63)) != 0 }

// concat returns a followed by b: a list made in x.
func (x *factsScratch) concat(a, b []string) []string {
	i := len(x.lists)
	x.lists = append(append(x.lists, a...), b...)
	return x.lists[i:len(x.lists):len(x.lists)]
}

// lastPool holds the maps appendNewest finds each entry's last place
// with, emptied (one of more than scratchMax entries is dropped).
var lastPool = sync.Pool{New: func() any { m := map[string]int{}; return &m }}

// dropIn returns list without the entries in drop, filtered in place (every
// caller passes a list of its own).
func dropIn(list []string, drop map[string]bool) []string {
	out := list[:0]
	for _, e := range list {
		if !drop[e] {
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
	b.Grow(min(max, 16<<10)) // what fitFirst counts keeps the section within max
	b.WriteString(FactsHeader)
	spare := 0
	wrote := false
	for k, kd := range kinds {
		// The label and the newest items that fit in the kind's share, in
		// their order.
		share := budget*factShares[k]/100 + spare
		first, used := fitFirst(kd.label, kd.items, kd.list, share)
		spare = share - used
		if first == len(kd.items) {
			continue
		}
		b.WriteString("\n")
		b.WriteString(kd.label)
		for i, e := range kd.items[first:] {
			switch {
			case kd.list:
				b.WriteString("\n- ")
			case i > 0:
				b.WriteString(", ")
			}
			b.WriteString(e)
		}
		wrote = true
	}
	if !wrote {
		return ""
	}
	return b.String()
}

// fitFirst returns the index of the oldest of the newest items that fit
// with label in budget characters (len(items) when none does) and the
// characters they take with it (0 when none does).
func fitFirst(label string, items []string, list bool, budget int) (int, int) {
	if len(items) == 0 {
		return 0, 0
	}
	used := 1 + len(label) // "\n" + label
	if used >= budget {
		return len(items), 0
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
		return len(items), 0
	}
	return first, used
}

// extractFacts returns the facts of messages, oldest first, as far as a
// section within max characters merged with previous can show them. The
// user's messages and the files edited are read whole (the files edited
// are left out of the other kinds); the commands, files read or named,
// errors and names are read from the newest message back, each kind until
// what it holds passes the most room it can get in the section (see
// [factRooms]), so the section renders as the whole extraction would.
func extractFacts(messages []processor.Message, previous factSet, max int, x *factsScratch) factSet {
	var s factSet
	edited := x.edited[:0] // as found, before cleaning
	calls := x.calls[:0]   // in order; read back in reverse
	user := x.user[:0]     // as found, before merging
	for _, m := range messages {
		if IsMarker(m) {
			continue
		}
		for _, part := range m.Parts {
			switch p := part.(type) {
			case processor.UserPrompt:
				if c := collapse(Clip(UserText(p), 1200)); c != "" {
					user = append(user, Clip(c, 300))
				}
			case processor.ToolCall:
				var c decodedCall
				c.args, c.ok = decodeArgsIn(p.Args, &x.args)
				calls = append(calls, c)
				edited = writtenByDecoded(edited, &x.shell, p, c.args, c.ok)
			}
		}
	}
	// The paths cleaned, in place.
	cleaned := edited[:0]
	for _, p := range edited {
		if p = cleanPath(p); p != "" {
			cleaned = append(cleaned, p)
		}
	}
	s.edited = x.appendNewest(nil, cleaned)
	s.user = x.appendNewest(nil, user)
	x.user = user

	allEdited := x.concat(previous.edited, s.edited)
	filter := &x.filter
	filter.set(allEdited, previous.files)
	rooms := newFactRooms(max, previous, s, x)
	files := newestFirst{limit: rooms.files, base: 1 + len(factsFiles), sep: 2, seen: &x.seen[0], items: x.items[0][:0], filter: filter}
	commands := newestFirst{limit: rooms.commands(), base: 1 + len(factsCommands), sep: 3, seen: &x.seen[1], items: x.items[1][:0]}
	errs := newestFirst{limit: rooms.errors(), base: 1 + len(factsErrors), sep: 3, seen: &x.seen[2], items: x.items[2][:0]}
	names := newestFirst{limit: rooms.names(), base: 1 + len(factsNames), sep: 2, seen: &x.seen[3], items: x.items[3][:0], filter: filter, names: true}
	// settle narrows the rooms of the kinds after those whose entries are
	// now final, and, for the kinds after those still growing, to the
	// most the entries found so far leave them.
	settle := func(done bool) {
		if rooms.filesUsed < 0 && (files.full() || done) {
			rooms.settleFiles(files.oldestFirst(x), previous, allEdited, x)
			commands.limit = rooms.commands()
		}
		if rooms.filesUsed >= 0 && rooms.commandsUsed < 0 && (commands.full() || done) {
			rooms.settleCommands(commands.oldestFirst(x), previous, x)
			errs.limit = rooms.errors()
		}
		if rooms.commandsUsed >= 0 && rooms.errorsUsed < 0 && (errs.full() || done) {
			rooms.settleErrors(errs.oldestFirst(x), previous, x)
			names.limit = rooms.names()
		}
		if rooms.errorsUsed >= 0 {
			return
		}
		// A kind's entries found so far are the newest of those its line
		// will list (the previous section's come before them), so what
		// its line takes in any room is at least what they take in it:
		// what it leaves to the kinds after it is at most the most that
		// room, less what they take, comes to over the rooms it may get.
		spare, exact := rooms.spareFiles, rooms.filesUsed >= 0
		if !exact {
			spare = maxSpare(files.items, files.sep, files.base, rooms.files, rooms.files)
		}
		if rooms.commandsUsed < 0 {
			lo, hi := rooms.share[3], rooms.share[3]+spare
			if exact {
				lo = hi
			}
			commands.limit = min(commands.limit, hi)
			spare = maxSpare(commands.items, commands.sep, commands.base, lo, hi)
			exact = false
		} else {
			spare = rooms.spareCommands
		}
		lo, hi := rooms.share[4], rooms.share[4]+spare
		if exact {
			lo = hi
		}
		errs.limit = min(errs.limit, hi)
		spare = maxSpare(errs.items, errs.sep, errs.base, lo, hi)
		names.limit = min(names.limit, rooms.share[5]+spare)
	}
	next := len(calls)           // the calls not read back yet: calls[:next]
	fs, ns := x.fs[:0], x.ns[:0] // one text's tokens, in order
	tokens := func(text string, withNames bool) {
		wantFiles, wantNames := !files.full(), withNames && !names.full()
		if !wantFiles && !wantNames {
			return
		}
		fs, ns = fs[:0], ns[:0]
		fs, ns = appendTokensOf(fs, ns, text, wantFiles, wantNames)
		files.addAll(fs)
		names.addAll(ns)
	}
	for i := len(messages) - 1; i >= 0 && !(files.full() && names.full() && errs.full() && commands.full()); i-- {
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
				next--
				if commands.full() && files.full() && names.full() {
					continue
				}
				c := &calls[next]
				if !commands.full() {
					var line string
					line, x.line = callLineIn(x.line, p, c.args, c.ok)
					commands.add(line)
				}
				if files.full() && names.full() {
					continue
				}
				if !c.ok {
					tokens(p.Args, true)
					continue
				}
				// The values' tokens in order, then taken newest first
				// (only the kinds not full yet: a full one takes no more).
				fs, ns = fs[:0], ns[:0]
				wantFiles, wantNames := !files.full(), !names.full()
				for k := range c.args {
					walkArgStrings(&c.args[k].val, func(v string) {
						fs, ns = appendTokensOf(fs, ns, v, wantFiles, wantNames)
					})
				}
				files.addAll(fs)
				names.addAll(ns)
			case processor.ToolReturn:
				if errs.full() {
					continue
				}
				if line := errorLine(p.ToolReturnContent()); line != "" {
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
		settle(false)
	}
	s.files, s.commands, s.errors, s.names = files.oldestFirst(x), commands.oldestFirst(x), errs.oldestFirst(x), names.oldestFirst(x)
	// The lists grown go back to the scratch, for the next extraction.
	x.edited, x.calls, x.fs, x.ns = edited, calls, fs, ns
	x.items = [4][]string{files.items, commands.items, errs.items, names.items}
	return s
}

// factsScratch is what a section is made in: maps and lists it empties
// when done, kept in scratchPool so that the next section (on any
// goroutine, one at a time) finds them grown. The section's lists are
// made in it, and nothing a section returns is in it.
type factsScratch struct {
	parsed [6][]string // the previous section's lists, by kind
	lists  []string    // where the other lists are made, each a slice of it
	drop   map[string]bool
	seen   [4]seenIndex // of the files, commands, errors and names collected
	items  [4][]string  // the same kinds' entries
	edited []string
	user   []string
	calls  []decodedCall
	fs, ns []string
	shell  shellWriter
	args   argScratch
	line   []byte // a call's line being written
	filter factFilter
}

// getScratch returns an empty scratch, from the pool when it holds one.
func getScratch() *factsScratch { return scratchPool.Get().(*factsScratch) }

var scratchPool = sync.Pool{New: func() any {
	x := &factsScratch{filter: factFilter{rejected: map[string]bool{}}, drop: map[string]bool{}, calls: make([]decodedCall, 0, 16)}
	return x
}}

// release empties x, which then holds no string of the section, and puts
// it back in the pool; a scratch grown past scratchMax entries in a map or
// a list is dropped instead, so that the pool holds no huge one.
func (x *factsScratch) release() {
	big := len(x.filter.rejected) > scratchMax
	clear(x.filter.rejected)
	x.filter.edited, x.filter.files = nil, nil
	for k := range x.seen {
		big = x.seen[k].reset() || big
		clear(x.items[k])
		x.items[k] = x.items[k][:0]
	}
	x.shell.release()
	x.args.release()
	for k := range x.parsed {
		clear(x.parsed[k][:cap(x.parsed[k])])
		x.parsed[k] = x.parsed[k][:0]
		big = big || cap(x.parsed[k]) > scratchMax
	}
	clear(x.lists[:cap(x.lists)])
	x.lists = x.lists[:0]
	big = big || cap(x.lists) > scratchMax
	if cap(x.line) > scratchMax {
		x.line = nil
	}
	clear(x.edited)
	clear(x.user)
	x.user = x.user[:0]
	big = big || cap(x.user) > scratchMax
	clear(x.calls)
	clear(x.fs)
	clear(x.ns)
	x.edited, x.calls, x.fs, x.ns = x.edited[:0], x.calls[:0], x.fs[:0], x.ns[:0]
	if !big {
		scratchPool.Put(x)
	}
}

// scratchMax bounds the entries of a pooled scratch's maps.
const scratchMax = 4096

// decodedCall is a tool call's arguments decoded (see decodeArgs): ok
// when they are a JSON object.
type decodedCall struct {
	ok   bool
	args []argMember
}

// shellMayWrite reports whether shellWritten may find a file the shell
// command s writes: it is false only when s holds no redirection (a '>'
// but a lone one that duplicates a descriptor, >&) and no name of a command that
// appendCommandWrites knows, quotes and backslashes (which may split a word)
// looked through.
func shellMayWrite(s string) bool {
	for i := 0; i < len(s); i++ {
		// Only a lone '>' right before '&' is sure to duplicate a
		// descriptor: after another '>' it may close a ">>".
		if s[i] == '>' && (i+1 == len(s) || s[i+1] != '&' || i > 0 && s[i-1] == '>') {
			return true
		}
	}
	if hasWritingCommand(s, false) {
		return true
	}
	return strings.ContainsAny(s, `'"\`) && hasWritingCommand(s, true)
}

// writingCommands are the commands appendCommandWrites finds files for.
var writingCommands = []string{"sed", "perl", "tee", "touch", "truncate", "cp", "mv", "install", "ln", "rsync"}

// hasWritingCommand reports whether one of writingCommands is in s as a
// whole word: not after a letter or an underscore, nor before a letter, a
// digit or an underscore (a command's name is its word, or what follows
// the word's last slash; words are split by other bytes, and a word may
// follow digits, as in >&2sed). When unquoted, it reads s as if its
// quotes and backslashes were taken out.
func hasWritingCommand(s string, unquoted bool) bool {
	// One pass: at each byte that may start a whole word, the commands
	// starting with that byte.
	var prev byte // the byte before s[i], 0 at the start
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unquoted && isQuoteByte(c) {
			continue
		}
		if ws := writingByFirst[c]; ws != nil && prev != '_' && !isLetterByte(prev) {
			for _, w := range ws {
				if end, ok := skipWord(s, i, w, unquoted); ok && (end == len(s) || !isWordByte(s[end])) {
					return true
				}
			}
		}
		prev = c
	}
	return false
}

// isQuoteByte reports whether c is a quote or a backslash: what
// hasWritingCommand looks through when it reads a command unquoted.
func isQuoteByte(c byte) bool { return c == '\'' || c == '"' || c == '\\' }

// skipWord reports whether w is at s[i:] (with quotes and backslashes
// skipped when unquoted) and returns the index of the first byte after it
// (and after the quotes that follow it, when unquoted).
func skipWord(s string, i int, w string, unquoted bool) (int, bool) {
	for k := 0; k < len(w); {
		switch {
		case i == len(s):
			return 0, false
		case unquoted && isQuoteByte(s[i]):
			i++
		case s[i] != w[k]:
			return 0, false
		default:
			i++
			k++
		}
	}
	for unquoted && i < len(s) && isQuoteByte(s[i]) {
		i++
	}
	return i, true
}

// writingByFirst lists writingCommands by their first byte.
var writingByFirst = func() (t [256][]string) {
	for _, w := range writingCommands {
		t[w[0]] = append(t[w[0]], w)
	}
	return t
}()

// isWordByte reports whether c is an ASCII letter, digit or underscore.
func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// writeWords are the words of a tool's name that make writesFiles true.
var writeWords = []string{"write", "edit", "create", "replace", "insert", "patch", "append", "save", "update_file", "modify", "delete", "remove", "move", "rename"}

// factRooms holds the most room each kind can get in a section of a given
// bound: a kind's share and what the kinds before it leave unused (see
// [factSet.render]). Before the kinds before it are final, a kind's room is
// counted as if they used nothing.
type factRooms struct {
	budget                                 int
	share                                  [6]int // each kind's own share
	files                                  int    // the room of the files read, exact
	filesUsed, commandsUsed, errorsUsed    int    // -1 until final
	spareFiles, spareCommands, spareErrors int
}

func newFactRooms(max int, previous, s factSet, x *factsScratch) factRooms {
	r := factRooms{budget: max - len(FactsHeader) - 1, filesUsed: -1, commandsUsed: -1, errorsUsed: -1}
	for k := range r.share {
		r.share[k] = r.budget * factShares[k] / 100
	}
	if r.budget <= 0 {
		return r // every room is 0 or less: nothing is read
	}
	user := x.appendNewest(previous.user, s.user)
	share := r.share[0]
	_, used := fitFirst(factsUser, user, true, share)
	share = r.share[1] + share - used
	_, used = fitFirst(factsEdited, x.appendNewest(previous.edited, s.edited), false, share)
	r.files = r.share[2] + share - used
	return r
}

func (r *factRooms) commands() int {
	if r.filesUsed >= 0 {
		return r.share[3] + r.spareFiles
	}
	return r.share[3] + r.files
}

func (r *factRooms) errors() int {
	if r.commandsUsed >= 0 {
		return r.share[4] + r.spareCommands
	}
	return r.share[4] + r.commands()
}

func (r *factRooms) names() int {
	if r.errorsUsed >= 0 {
		return r.share[5] + r.spareErrors
	}
	return r.share[5] + r.errors()
}

// settleFiles takes the files read found (all that can show) as final.
func (r *factRooms) settleFiles(found []string, previous factSet, allEdited []string, x *factsScratch) {
	files := x.appendNewest(previous.files, found)
	_, r.filesUsed = fitFirst(factsFiles, x.dropAll(files, allEdited), false, r.files)
	r.spareFiles = r.files - r.filesUsed
}

func (r *factRooms) settleCommands(found []string, previous factSet, x *factsScratch) {
	room := r.commands()
	_, r.commandsUsed = fitFirst(factsCommands, x.appendNewest(previous.commands, found), true, room)
	r.spareCommands = room - r.commandsUsed
}

func (r *factRooms) settleErrors(found []string, previous factSet, x *factsScratch) {
	room := r.errors()
	_, r.errorsUsed = fitFirst(factsErrors, x.appendNewest(previous.errors, found), true, room)
	r.spareErrors = room - r.errorsUsed
}

// maxSpare returns the most room minus what a kind's line takes in it
// (as fitFirst counts: nothing when not even its newest entry fits), over
// the rooms from lo to hi, for a line of base characters and the entries
// items, newest first, each taking its length and sep.
func maxSpare(items []string, sep, base, lo, hi int) int {
	best := hi // no entry fits in a room below the first step
	if len(items) > 0 {
		if best = min(hi, base+len(items[0])+sep-1); best < lo {
			best = 0
		}
	}
	used := base
	for k, e := range items {
		used += len(e) + sep // what the line takes from this room on
		if used > hi {
			break
		}
		end := hi // the last room before the next entry fits too
		if k+1 < len(items) {
			end = min(hi, used+len(items[k+1])+sep-1)
		}
		if end >= lo {
			best = max(best, end-used)
		}
	}
	return best
}

// newestFirst collects distinct entries, newest first (each at its last
// occurrence), until what they would take in a section passes limit: a
// line's base characters and each entry's own and its separator's, as
// fitFirst counts them. Once full, the section cannot show an entry older
// than those it holds.
type newestFirst struct {
	limit int
	base  int                         // the label and its line break
	sep   int                         // an entry's separator
	keep  func(string) (string, bool) // nil (and no filter): every entry, as it is
	// filter, when not nil, keeps the files (or, when names, the names)
	// as the extraction does, instead of keep.
	filter *factFilter
	names  bool
	seen   *seenIndex
	items  []string
	chars  int
}

func (c *newestFirst) full() bool { return c.base+c.chars > c.limit || c.base >= c.limit }

// add adds e, older than the entries added before it.
func (c *newestFirst) add(e string) {
	if c.keep != nil || c.filter != nil {
		if c.has(e) {
			return // a kept entry is its own cleaned form
		}
		var k string
		var ok bool
		switch {
		case c.filter == nil:
			k, ok = c.keep(e)
		case c.names:
			k, ok = c.filter.name(e)
		default:
			k, ok = c.filter.file(e)
		}
		if !ok || k == "" {
			return
		}
		if k != e && c.has(k) {
			return // (e itself is not in seen: it was just looked up)
		}
		e = k
	} else if e == "" || c.has(e) {
		return
	}
	c.items = append(c.items, e)
	c.chars += len(e) + c.sep
	c.seen.added(c.items)
}

// factFilter keeps the files and the names the extraction finds that
// the section lists as neither files edited nor, for a name, files of the
// previous section (a file's path cleaned first): it lives in the
// scratch, where the collectors reach it without a closure.
type factFilter struct {
	edited, files             []string // all the files edited; the previous section's files
	editedPrints, filesPrints printSet // their fingerprints
	rejected                  map[string]bool
}

// set makes f filter against edited and files.
func (f *factFilter) set(edited, files []string) {
	f.edited, f.files = edited, files
	// Only a token whose fingerprint one of those files has needs
	// comparing to them.
	f.editedPrints, f.filesPrints = printSet{}, printSet{}
	for _, e := range edited {
		f.editedPrints.set(fingerprint(e))
	}
	for _, e := range files {
		f.filesPrints.set(fingerprint(e))
	}
}

// file returns the path p cleaned, and whether it is kept: not a file
// edited, nor the suffix of one.
func (f *factFilter) file(p string) (string, bool) {
	if f.rejected[p] {
		return "", false
	}
	q := cleanPath(p)
	if q == "" || f.editedPrints.has(fingerprint(q)) && slices.Contains(f.edited, q) || suffixOf(q, f.edited) {
		f.rejected[p] = true
		return "", false
	}
	return q, true
}

// name returns n, and whether it is kept: what the section lists as a
// file is no name.
func (f *factFilter) name(n string) (string, bool) {
	h := fingerprint(n)
	return n, !(f.editedPrints.has(h) && slices.Contains(f.edited, n)) && !(f.filesPrints.has(h) && slices.Contains(f.files, n))
}

// has reports whether e is one of the entries.
func (c *newestFirst) has(e string) bool {
	x := c.seen
	if x.many != nil {
		return x.many[e]
	}
	h := fingerprint(e)
	i := x.slot[h]
	if i == 0 {
		return false
	}
	return c.items[i-1] == e || x.shared.has(h) && slices.Contains(c.items, e)
}

// seenIndex finds the entries a newestFirst holds: up to seenSlots of them
// by their fingerprint (see fingerprint), the place of the first entry of
// each fingerprint in its slot (an entry with the fingerprint of another
// is compared to all of them); more through a map.
type seenIndex struct {
	slot   [2048]uint16 // 1 + the index of the first entry of a fingerprint
	shared printSet     // the fingerprints of more than one entry
	used   []uint16     // the slots set
	many   map[string]bool
	m      map[string]bool // what many is, when the entries are many
}

// seenSlots is the most entries a seenIndex finds by their fingerprint.
const seenSlots = 256

// added records the last of items, which it did not hold.
func (x *seenIndex) added(items []string) {
	e := items[len(items)-1]
	if x.many != nil {
		x.many[e] = true
		return
	}
	if len(items) > seenSlots {
		if x.m == nil {
			x.m = map[string]bool{}
		}
		x.many = x.m
		for _, e := range items {
			x.many[e] = true
		}
		return
	}
	h := fingerprint(e)
	if x.slot[h] != 0 {
		x.shared.set(h)
		return
	}
	x.slot[h] = uint16(len(items))
	x.used = append(x.used, uint16(h))
}

// reset empties x, and reports whether its map held more than scratchMax
// entries.
func (x *seenIndex) reset() bool {
	for _, h := range x.used {
		x.slot[h] = 0
	}
	x.used = x.used[:0]
	x.shared = printSet{}
	big := len(x.m) > scratchMax
	clear(x.m)
	x.many = nil
	return big
}

// addAll adds es, in their order (so the last is the newest), older than
// the entries added before them.
func (c *newestFirst) addAll(es []string) {
	for k := len(es) - 1; k >= 0 && !c.full(); k-- {
		c.add(es[k])
	}
}

// oldestFirst returns the entries, oldest first: a list made in x.
func (c *newestFirst) oldestFirst(x *factsScratch) []string {
	a := len(x.lists)
	for i := len(c.items) - 1; i >= 0; i-- {
		x.lists = append(x.lists, c.items[i])
	}
	return x.lists[a:len(x.lists):len(x.lists)]
}

// Bounds of a call's line in the facts.
const (
	maxArgChars  = 200 // a longer argument value is shown as its size
	maxCallChars = 240 // a longer line is cut, "…" marking the cut
)

// callLine renders a tool call as "name: value; value", its string,
// number and boolean arguments (args, decoded, when ok: they are a JSON
// object; otherwise the raw text is shown) in the order of their names,
// the telling one (a command, a path) first, whitespace collapsed, a value
// over maxArgChars shown as its size (as file contents written are); the
// line is cut at maxCallChars.
func callLine(c processor.ToolCall, args []argMember, ok bool) string {
	line, _ := callLineIn(nil, c, args, ok)
	return line
}

// callLineIn is callLine writing the line in buf (and returning it grown,
// for the next line): the line is then copied out once, at its length.
func callLineIn(buf []byte, c processor.ToolCall, args []argMember, ok bool) (string, []byte) {
	b := buf[:0]
	if !ok {
		b = append(append(append(b, c.ToolName...), ": "...), collapse(c.Args)...)
	} else {
		// The first of argKeys present goes first, in the place of the
		// first key.
		first := -1
		for _, want := range argKeys {
			if i, found := argIndex(args, want); found {
				first = i
				break
			}
		}
		b = append(append(b, c.ToolName...), ": "...)
		wrote := false
		for k := 0; k < len(args) && len(b) <= maxCallChars; k++ {
			i := k
			switch {
			case first >= 0 && k == 0:
				i = first
			case first >= 0 && k == first:
				i = 0
			}
			var val string
			size := -1 // a value shown as its size
			switch v := &args[i].val; v.kind {
			case argString:
				if len(v.s) > 4*maxArgChars {
					size = len(v.s)
					break
				}
				// A value over maxArgChars once collapsed is not built.
				if t, n := collapseWithin(v.s, maxArgChars); n > maxArgChars {
					size = n
				} else {
					val = t
				}
			case argNumber:
				val = numberText(v.s)
			case argBool:
				val = strconv.FormatBool(v.b)
			}
			if val == "" && size < 0 {
				continue
			}
			if wrote {
				b = append(b, "; "...)
			}
			if size >= 0 {
				b = append(strconv.AppendInt(append(b, '('), int64(size), 10), " characters)"...)
			} else {
				b = append(b, val...)
			}
			wrote = true
		}
	}
	if len(b) > maxCallChars {
		cut := maxCallChars - len("…")
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut-- // as runeFloor
		}
		return string(b[:cut]) + "…", b
	}
	return string(b), b
}

// numberText returns the JSON number lit as encoding/json writes the
// float64 it reads as: an integer of at most 15 digits (exact in a
// float64, and below 1e21) is written as it is read, so it is returned
// in place; any other goes through json.Marshal.
func numberText(lit string) string {
	digits := strings.TrimPrefix(lit, "-")
	plain := len(digits) > 0 && len(digits) <= 15
	for i := 0; plain && i < len(digits); i++ {
		plain = '0' <= digits[i] && digits[i] <= '9'
	}
	// A JSON number has no leading zero, but lit is checked here, not
	// trusted.
	if plain && (digits[0] != '0' || len(digits) == 1) {
		return lit
	}
	f, _ := strconv.ParseFloat(lit, 64)
	j, _ := json.Marshal(f)
	return string(j)
}

// appendTokens appends to files the path-like tokens of text (as
// pathTokens finds them) and to names its code names: identifiers of at
// least 4 bytes with an underscore or a capital after a lower-case letter
// (read_config, FileStorage), and dotted names whose segments are all
// identifiers, with a last segment that is not a file extension
// (os.path.join, settings.DEBUG), outside paths. It reads text once.
func appendTokens(files, names []string, text string) ([]string, []string) {
	return appendTokensOf(files, names, text, true, true)
}

// appendTokensOf is appendTokens looking only for the kinds wanted: the
// files when wantFiles, the names when wantNames.
func appendTokensOf(files, names []string, text string, wantFiles, wantNames bool) ([]string, []string) {
	if !wantNames {
		if wantFiles {
			files = appendPathsOf(files, text)
		}
		return files, names
	}
	// Only a run with a dot, a slash, an underscore or a capital after a
	// lower-case letter yields a token: find those bytes, 8 at a time, and
	// read the runs around them. (A run whose capitals follow no lower-case
	// letter, and that holds no other of those bytes, yields nothing.)
	done := 0 // text[:done] is read
	for {
		p := nextMarkByte(text, done)
		if p < 0 {
			return files, names
		}
		// The run holding p, text[i:j]; the bytes before p in it are
		// plain but for capitals after no lower-case letter. Its end is
		// found first: most runs are passed over without their start.
		j := p + 1
		var rest uint8 // the classes of the run's bytes after p
		for ; j < len(text); j++ {
			c := byteClass[text[j]]
			if c&classPath == 0 {
				break
			}
			rest |= c
		}
		from := done // the run starts at or after it
		done = j
		if text[p] == '.' && j == p+1 {
			// A dot that ends the run (the end of a sentence), the run's
			// only mark but capitals after no lower-case letter, leaves
			// no path (no dot or slash once the dot is trimmed) and no
			// name (no underscore, inner dot or capital after a
			// lower-case letter).
			continue
		}
		i := p
		var before uint8 // the classes of the run's bytes before p
		for ; i > from; i-- {
			c := byteClass[text[i-1]]
			if c&classPath == 0 {
				break
			}
			before |= c
		}
		class := rest | byteClass[text[p]]
		dot, slash, mark := class&classDot != 0, class&classSlash != 0, class&classMark != 0
		run := text[i:j]
		if (dot || slash) && wantFiles {
			if p := pathToken(run); p != "" {
				files = append(files, p)
			}
		}
		if !wantNames || slash || !dot && !mark {
			continue // a path's segments are no names
		}
		if (class|before)&classOther == 0 {
			// The run is one segment of name bytes and dots.
			if !dot {
				if len(run) <= 80 && isCodeIdent(run) {
					names = append(names, run)
				}
			} else if name, ok := codeName(strings.Trim(run, ".")); ok {
				names = append(names, name)
			}
			continue
		}
		for k := 0; k < len(run); {
			m, dot := k, -1 // dot: the segment's last dot
			for ; m < len(run); m++ {
				if c := run[m]; c == '.' {
					dot = m
				} else if !isNameByte(c) {
					break
				}
			}
			if dot < 0 {
				// No dot to trim or look at: an identifier or nothing.
				if tok := run[k:m]; len(tok) <= 80 && isCodeIdent(tok) {
					names = append(names, tok)
				}
			} else if name, ok := codeName(strings.Trim(run[k:m], ".")); ok {
				names = append(names, name)
			}
			k = m + 1
		}
	}
}

// appendPathsOf appends to files the path-like tokens of text, as
// appendTokensOf does: only a run with a dot or a slash may be one, so
// only those bytes are looked for.
func appendPathsOf(files []string, text string) []string {
	done := 0 // text[:done] is read
	for {
		p := nextDotOrSlash(text, done)
		if p < 0 {
			return files
		}
		// The run holding p: back over path bytes, forward likewise.
		i := p
		for i > done && isPathByte(text[i-1]) {
			i--
		}
		j := p + 1
		for j < len(text) && isPathByte(text[j]) {
			j++
		}
		done = j
		if t := pathToken(text[i:j]); t != "" {
			files = append(files, t)
		}
	}
}

// nextDotOrSlash returns the index of the first '.' or '/' of s at or
// after i, or -1. It tests 8 bytes at a time.
func nextDotOrSlash(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		// '.' and '/' differ in their lowest bit only.
		if hit := swarZero((load8(s, i) | swarOnes) ^ (swarOnes * '/')); hit != 0 {
			return i + bits.TrailingZeros64(hit)>>3
		}
	}
	for ; i < len(s); i++ {
		if s[i] == '.' || s[i] == '/' {
			return i
		}
	}
	return -1
}

// nextMarkByte returns the index of the first byte of s at or after i
// that marks a run worth reading, or -1: a dot, a slash, an underscore, or
// a capital after a lower-case letter (for the byte at i, s[i-1] counts).
// It tests 8 bytes at a time.
func nextMarkByte(s string, i int) int {
	var carry uint64 // 0x80 when the byte before the word is lower-case
	if i > 0 && 'a' <= s[i-1] && s[i-1] <= 'z' {
		carry = 0x80
	}
	for ; i+8 <= len(s); i += 8 {
		x := load8(s, i)
		// Each test flags a byte by its high bit; the lowest byte flagged
		// is exact (a borrow runs only toward higher bytes).
		t := x &^ swarHigh                                                              // each byte's low 7 bits
		upper := (t + swarOnes*(0x80-'A')) & ^(t + swarOnes*(0x7f-'Z')) & swarHigh &^ x // ASCII 'A' to 'Z'
		lower := (t + swarOnes*(0x80-'a')) & ^(t + swarOnes*(0x7f-'z')) & swarHigh &^ x // ASCII 'a' to 'z'
		afterLower := lower<<8 | carry
		// '.' and '/' differ in their lowest bit only: one test finds both.
		if hit := upper&afterLower | swarZero((x|swarOnes)^(swarOnes*'/')) | swarZero(x^(swarOnes*'_')); hit != 0 {
			return i + bits.TrailingZeros64(hit)>>3
		}
		carry = lower >> 56
	}
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.' || c == '/' || c == '_':
			return i
		case 'A' <= c && c <= 'Z' && i > 0 && 'a' <= s[i-1] && s[i-1] <= 'z':
			return i
		}
	}
	return -1
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
	if len(tok) < 4 || isKnownExt(tok[dot+1:]) {
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

func isLetterByte(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// isCodeIdent reports whether s is an identifier of at least 4 bytes, led
// by a letter or underscore, with an inner underscore or a capital after
// a lower-case letter.
func isCodeIdent(s string) bool {
	if len(s) < 4 || !(s[0] == '_' || isLetterByte(s[0])) {
		return false
	}
	letters := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLetterByte(c) {
			letters = true
		}
		if i > 0 && c == '_' && i < len(s)-1 {
			return letters || isLetterByte(s[i+1])
		}
		if i > 0 && 'A' <= c && c <= 'Z' && 'a' <= s[i-1] && s[i-1] <= 'z' {
			return true
		}
	}
	return false
}
