// Package fidelity measures how much of what an agent went on to use a
// compacted request still showed it: the metric needed_kept of the peers
// harness kept beside the project, computed here on abridge's message model.
//
// For each request, answered in the transcript by an assistant message A,
// the needed tokens are the distinctive tokens ([AppendTokens]) A uses, in
// its text or in its tool calls' arguments, that occurred earlier in the
// original transcript (the messages before A as recorded, not as a
// processor left them), less those of system messages: every host sends its
// system prompt whatever the compaction does (developer messages count as
// any other, as in the harness). A needed token is kept when
// it is a token of the request that was sent (its messages' contents and
// tool-call arguments, tokenized the same way), and far when its last
// occurrence before A is more than [FarMessages] messages back, where
// compaction acts. Messages are counted as the OpenAI Chat Completions API
// carries them: one per part of a request, one per response.
package fidelity

import "github.com/abridge-go/abridge/processor"

// FarMessages is the distance, in messages, beyond which a needed token
// counts as far.
const FarMessages = 20

// Figures are the sums over the requests of one or more transcripts.
type Figures struct {
	// Needed counts the needed tokens, request by request (a token needed
	// by two requests counts twice).
	Needed int64
	// Kept counts the needed tokens the requests sent.
	Kept int64
	// Far counts the needed tokens last seen more than FarMessages
	// messages before the reply.
	Far int64
	// FarKept counts the far tokens the requests sent.
	FarKept int64
}

// Add returns the sums of f and g.
func (f Figures) Add(g Figures) Figures {
	return Figures{Needed: f.Needed + g.Needed, Kept: f.Kept + g.Kept, Far: f.Far + g.Far, FarKept: f.FarKept + g.FarKept}
}

// NeededKept returns Kept / Needed, or 1 when nothing was needed.
func (f Figures) NeededKept() float64 { return share(f.Kept, f.Needed) }

// NeededKeptFar returns FarKept / Far, or 1 when no far token was needed.
func (f Figures) NeededKeptFar() float64 { return share(f.FarKept, f.Far) }

func share(kept, needed int64) float64 {
	if needed == 0 {
		return 1
	}
	return float64(kept) / float64(needed)
}

// set is the set of tokens of one text.
type set map[string]struct{}

// unit is one message as the API carries it.
type unit struct {
	system bool
	texts  []string // contents
	args   []string // tool-call arguments
}

// Counter measures the requests of one transcript. It tokenizes each text
// of the transcript once, when it is made, and keeps the token sets. A
// Counter is not safe for concurrent use.
type Counter struct {
	units []unit
	first []int // index in units of each transcript message's first unit

	texts map[string]set // token sets of contents, by text
	args  map[string]set // token sets of tool-call arguments, by text

	lastSeen map[string]int      // token -> last unit it occurred in, system units aside
	system   map[string]struct{} // tokens of system units
	scanned  int                 // units [0, scanned) are in lastSeen and system

	scratch []string
	needs   []need
	figures Figures
}

// need is one needed token of the request being counted.
type need struct {
	token string
	far   bool
	kept  bool
}

// New returns a Counter for transcript, which it keeps (and does not
// modify): the caller must not modify it either while counting.
func New(transcript []processor.Message) *Counter {
	c := &Counter{
		first:    make([]int, len(transcript)),
		texts:    map[string]set{},
		args:     map[string]set{},
		lastSeen: map[string]int{},
		system:   map[string]struct{}{},
	}
	for i, m := range transcript {
		c.first[i] = len(c.units)
		c.units = appendUnits(c.units, m)
	}
	// Every text is tokenized now, once: counting a request then
	// allocates nothing but its needs (a replay times its processors
	// between the requests it counts).
	for _, u := range c.units {
		c.eachSet(u, func(set) bool { return true })
	}
	return c
}

// appendUnits appends the API messages m is sent as.
func appendUnits(units []unit, m processor.Message) []unit {
	if m.Kind == processor.Response {
		var u unit
		for _, p := range m.Parts {
			switch p := p.(type) {
			case processor.Text:
				u.texts = append(u.texts, p.Content)
			case processor.ToolCall:
				u.args = append(u.args, p.Args)
			}
		}
		return append(units, u)
	}
	for _, p := range m.Parts {
		u := unit{texts: requestTexts(nil, p)}
		if s, ok := p.(processor.SystemPrompt); ok && !s.Developer {
			u.system = true
		}
		units = append(units, u)
	}
	return units
}

// requestTexts appends the contents a request part sends.
func requestTexts(dst []string, p processor.Part) []string {
	eachRequestText(p, func(text string) bool {
		dst = append(dst, text)
		return true
	})
	return dst
}

// eachRequestText calls fn with each content a request part sends until fn
// returns false, and reports whether it never did.
func eachRequestText(p processor.Part, fn func(string) bool) bool {
	switch p := p.(type) {
	case processor.SystemPrompt:
		return fn(p.Content)
	case processor.UserPrompt:
		if p.Contents == nil {
			return fn(p.Content)
		}
		for _, c := range p.Contents {
			if c.Type == "text" && !fn(c.Text) {
				return false
			}
		}
	case processor.ToolReturn:
		return fn(p.ToolReturnContent())
	case processor.RetryPrompt:
		return fn(p.Content)
	}
	return true
}

// Request counts the request answered by the transcript's message reply
// (a response), which sent the history sent. Requests are counted in the
// order of their replies; counting an earlier reply after a later one
// starts the scan of the transcript over, so it costs more but counts the
// same.
func (c *Counter) Request(reply int, sent []processor.Message) {
	if reply < 0 || reply >= len(c.first) {
		return
	}
	at := c.first[reply]
	if at < c.scanned {
		clear(c.lastSeen)
		clear(c.system)
		c.scanned = 0
	}
	for ; c.scanned < at; c.scanned++ {
		u := c.units[c.scanned]
		c.eachSet(u, func(s set) bool {
			for t := range s {
				if u.system {
					c.system[t] = struct{}{}
				} else {
					c.lastSeen[t] = c.scanned
				}
			}
			return true
		})
	}

	c.needs = c.needs[:0]
	c.eachSet(c.units[at], func(s set) bool {
		for t := range s {
			if _, ok := c.system[t]; ok {
				continue
			}
			if last, ok := c.lastSeen[t]; ok && !c.needed(t) {
				c.needs = append(c.needs, need{token: t, far: at-last > FarMessages})
			}
		}
		return true
	})
	if len(c.needs) == 0 {
		return
	}
	c.find(sent)
	for _, n := range c.needs {
		c.figures.Needed++
		if n.kept {
			c.figures.Kept++
		}
		if n.far {
			c.figures.Far++
			if n.kept {
				c.figures.FarKept++
			}
		}
	}
}

// needed reports whether t is among the needs of the current request (a
// reply's content and arguments may both hold it).
func (c *Counter) needed(t string) bool {
	for _, n := range c.needs {
		if n.token == t {
			return true
		}
	}
	return false
}

// find marks the needs that sent holds, looking from its end (where most
// needed tokens are) and stopping once all are found.
func (c *Counter) find(sent []processor.Message) {
	left := len(c.needs)
	look := func(s set) bool {
		for k := range c.needs {
			if n := &c.needs[k]; !n.kept {
				if _, ok := s[n.token]; ok {
					n.kept = true
					left--
				}
			}
		}
		return left > 0
	}
	for k := len(sent) - 1; k >= 0 && left > 0; k-- {
		m := sent[k]
		for _, p := range m.Parts {
			ok := true
			switch p := p.(type) {
			case processor.Text:
				ok = look(c.setOf(c.texts, p.Content, AppendTokens))
			case processor.ToolCall:
				ok = look(c.setOf(c.args, p.Args, AppendArgumentTokens))
			default:
				if m.Kind == processor.Request {
					ok = eachRequestText(p, func(text string) bool { return look(c.setOf(c.texts, text, AppendTokens)) })
				}
			}
			if !ok {
				return
			}
		}
	}
}

// eachSet calls fn with the token set of each content and arguments of u
// until fn returns false.
func (c *Counter) eachSet(u unit, fn func(set) bool) {
	for _, text := range u.texts {
		if !fn(c.setOf(c.texts, text, AppendTokens)) {
			return
		}
	}
	for _, a := range u.args {
		if !fn(c.setOf(c.args, a, AppendArgumentTokens)) {
			return
		}
	}
}

// setOf returns the token set of text from cache, tokenizing it with
// tokenize the first time.
func (c *Counter) setOf(cache map[string]set, text string, tokenize func([]string, string) []string) set {
	if s, ok := cache[text]; ok {
		return s
	}
	c.scratch = tokenize(c.scratch[:0], text)
	s := make(set, len(c.scratch))
	for _, t := range c.scratch {
		s[t] = struct{}{}
	}
	cache[text] = s
	return s
}

// Figures returns the sums over the requests counted so far.
func (c *Counter) Figures() Figures { return c.figures }
