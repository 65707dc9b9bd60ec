package processor

// CharsPerToken is the ratio EstimateTokens assumes for text it has no
// provider count for.
const CharsPerToken = 4

// MessageOverheadTokens is the per-message cost EstimateTokens adds for
// role markers and framing.
const MessageOverheadTokens = 4

// Chars returns the number of characters (bytes of UTF-8) of a message's
// content that a provider would see: text, prompts, tool returns (JSON when
// structured), tool names and arguments, the raw bytes of [Opaque] parts,
// and the Thinking of a response with tool calls (which compatible servers
// want back in a tool loop; other Thinking is not sent, and [PartChars]
// counts none). Thinking is counted by its Raw bytes when it has them.
func Chars(m Message) int {
	n := len(m.Refusal())
	calls := m.HasToolCalls()
	for _, p := range m.Parts {
		if t, ok := p.(Thinking); ok && calls {
			n += max(len(t.Content), len(t.Raw))
			continue
		}
		n += PartChars(p)
	}
	return n
}

// PartChars returns the number of characters of one part, as [Chars] counts.
func PartChars(p Part) int {
	switch p := p.(type) {
	case SystemPrompt:
		return len(p.Content)
	case UserPrompt:
		if p.Contents == nil {
			return len(p.Content)
		}
		n := 0
		for _, c := range p.Contents {
			n += len(c.Text) + len(c.Data)
		}
		return n
	case ToolReturn:
		switch {
		case p.JSON != nil:
			return len(p.JSON)
		case p.Contents != nil:
			n := 0
			for _, c := range p.Contents {
				n += len(c) + 1
			}
			return max(n-1, 0)
		}
		return len(p.Content)
	case RetryPrompt:
		return len(p.Content)
	case Text:
		return len(p.Content)
	case ToolCall:
		return len(p.ToolName) + len(p.Args) + len(p.ToolCallID)
	case Opaque:
		return len(p.Raw)
	}
	return 0
}

// MessageTokens estimates one message's prompt tokens from its characters.
func MessageTokens(m Message) int {
	return (Chars(m)+CharsPerToken-1)/CharsPerToken + MessageOverheadTokens
}

// ContentTokens estimates the prompt tokens of messages from their content
// alone ([MessageTokens] of each), anchored on no provider usage: the basis
// on which two histories, one compacted from the other, compare (only the
// first may hold a usage that anchors [EstimateTokens]).
func ContentTokens(messages []Message) int {
	n := 0
	for _, m := range messages {
		n += MessageTokens(m)
	}
	return n
}

// EstimateTokens estimates the prompt tokens of sending history. It anchors
// on the latest response whose usage is trustworthy: one with InputTokens
// reported and Usage.PromptMessages equal to its own index (the messages
// before it are still the ones that were sent; 0, "unknown", never
// anchors). That response's input and output tokens count exactly; only
// the messages after it are estimated, at [CharsPerToken] characters a
// token plus [MessageOverheadTokens] each.
// Without an anchor every message is estimated.
func EstimateTokens(history []Message) int {
	start, total := 0, 0
	for i := len(history) - 1; i >= 0; i-- {
		m := &history[i]
		if m.Kind != Response || m.Meta == nil {
			continue
		}
		if u := m.Meta.Usage; u.InputTokens > 0 && u.PromptMessages > 0 && u.PromptMessages == i {
			total = int(u.InputTokens + u.OutputTokens)
			start = i + 1
			break
		}
	}
	for _, m := range history[start:] {
		total += MessageTokens(m)
	}
	return total
}

// WalkContent calls num and str, in a fixed order, with everything of m that
// identifies its content: its kind, its parts' kinds and counts, and every
// text, ID, name and argument a provider would see (thinking included;
// usage, model name and time left out). Callers hash or compare messages by
// content with it, each with its own policy for long strings.
func WalkContent(m Message, num func(int), str func(string)) {
	num(int(m.Kind))
	num(len(m.Parts))
	if m.Meta != nil {
		str(m.Meta.Name)
		str(m.Meta.Refusal)
	} else {
		str("")
		str("")
	}
	for _, p := range m.Parts {
		// Each part starts with a tag of its kind: a number, which costs
		// a hash less than its kind's name.
		switch p := p.(type) {
		case SystemPrompt:
			num(walkSystem)
			num(boolInt(p.Developer))
			str(p.Name)
			str(p.Content)
		case UserPrompt:
			num(walkUser)
			str(p.Name)
			str(p.Content)
			num(len(p.Contents))
			for _, c := range p.Contents {
				str(c.Type)
				str(c.Text)
				str(string(c.Data))
			}
		case ToolReturn:
			num(walkToolReturn)
			str(p.ToolCallID)
			str(p.ToolReturnContent())
		case RetryPrompt:
			num(walkRetry)
			str(p.ToolCallID)
			str(p.Content)
		case Text:
			num(walkText)
			str(p.Content)
		case ToolCall:
			num(walkToolCall)
			str(p.ToolCallID)
			str(p.ToolName)
			str(p.Args)
		case Thinking:
			num(walkThinking)
			str(p.Content)
			str(p.Signature)
			str(p.Raw)
		case Opaque:
			num(walkOpaque)
			str(p.API)
			str(p.Type)
			str(p.Raw)
		default:
			num(walkOther)
			str(p.PartKind())
		}
	}
}

// The tags WalkContent gives each part's kind.
const (
	walkSystem = iota + 1
	walkUser
	walkToolReturn
	walkRetry
	walkText
	walkToolCall
	walkThinking
	walkOpaque
	walkOther
)

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
