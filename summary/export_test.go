package summary

import "github.com/abridge-go/abridge/processor"

// SectionWhole is [Facts.Section] reading every message whole, without
// stopping once each kind is full: what the early stop must equal.
func (f *Facts) SectionWhole(messages []processor.Message, previous string, max int) string {
	if max <= 0 || max > f.maxChars {
		max = f.maxChars
	}
	s := parseFacts(previous)
	s.add(extractFacts(messages, s, 1<<30))
	return s.render(max)
}
