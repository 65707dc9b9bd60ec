package wire

import "github.com/abridge-go/abridge/processor"

// namerLook is how many messages a namer looks back through before it
// indexes the history's calls.
const namerLook = 16

// namer finds the name of the call a tool return answers: that of the
// last call with its ID before it. The call is nearly always a message or
// two before its return, so the namer looks back a few messages first; it
// indexes the calls of the messages before, once and then as more come,
// only when that fails, so that a history costs time in proportion to its
// length whatever it holds, and a history whose returns follow their calls
// costs no index at all.
type namer struct {
	names   map[string]string // the calls of msgs[:indexed], the last of each ID
	indexed int
}

// name returns the name of the last call with ID id in msgs (the
// messages before the return, as given to every earlier call of name, and
// more), or "".
func (n *namer) name(msgs []processor.Message, id string) string {
	for i := len(msgs) - 1; i >= 0 && i >= len(msgs)-namerLook; i-- {
		if name, ok := callIn(msgs[i].Parts, id); ok {
			return name
		}
	}
	if len(msgs) <= namerLook {
		return ""
	}
	if n.names == nil {
		n.names = map[string]string{}
	}
	for ; n.indexed < len(msgs); n.indexed++ {
		for _, p := range msgs[n.indexed].Parts {
			if c, ok := p.(processor.ToolCall); ok {
				n.names[c.ToolCallID] = c.ToolName
			}
		}
	}
	return n.names[id]
}

// callIn returns the name of the last call with ID id among parts.
func callIn(parts []processor.Part, id string) (string, bool) {
	for j := len(parts) - 1; j >= 0; j-- {
		if c, ok := parts[j].(processor.ToolCall); ok && c.ToolCallID == id {
			return c.ToolName, true
		}
	}
	return "", false
}

// nameReturns returns m, read after msgs, with each tool return named from
// its call: the last before it in m, else nm's name in msgs. It builds a
// new message only when a name changes.
func nameReturns(m processor.Message, nm *namer, msgs []processor.Message) processor.Message {
	if m.Kind != processor.Request {
		return m
	}
	var parts []processor.Part
	for j, p := range m.Parts {
		q, ok := p.(processor.ToolReturn)
		if !ok {
			continue
		}
		n, ok := callIn(m.Parts[:j], q.ToolCallID)
		if !ok {
			n = nm.name(msgs, q.ToolCallID)
		}
		if n != q.ToolName {
			q.ToolName = n
			if parts == nil {
				parts = append([]processor.Part(nil), m.Parts...)
			}
			parts[j] = q
		}
	}
	if parts == nil {
		return m
	}
	m.Parts = parts
	return m
}

// callFinder tells whether a call with an ID is among messages, as namer
// finds its name: it looks back a few messages first (an output nearly
// always follows its call closely), and indexes the calls of the messages
// only when that fails, once and then as more come.
type callFinder struct {
	ids     map[string]bool // the calls of msgs[:indexed]
	indexed int
}

// has reports whether msgs (the messages before the output, as given to
// every earlier call of has, and more) hold a call with ID id.
func (f *callFinder) has(msgs []processor.Message, id string) bool {
	for i := len(msgs) - 1; i >= 0 && i >= len(msgs)-namerLook; i-- {
		if _, ok := callIn(msgs[i].Parts, id); ok {
			return true
		}
	}
	if len(msgs) <= namerLook {
		return false
	}
	if f.ids == nil {
		f.ids = map[string]bool{}
	}
	for ; f.indexed < len(msgs); f.indexed++ {
		for _, p := range msgs[f.indexed].Parts {
			if c, ok := p.(processor.ToolCall); ok {
				f.ids[c.ToolCallID] = true
			}
		}
	}
	return f.ids[id]
}
