package session

import (
	"context"
	"slices"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// Recall returns what the session holds under ref, as agent.WithRecall
// asks of its store: for a summary's reference (summary.Ref, the
// "sum-…" of its marker), the messages the compaction that added that
// marker removed from the working history, rendered one line per part;
// for a tool call's ID, the original output of the call as the transcript
// holds it (the latest, when the ID was used twice). found is false when
// the session holds nothing under ref. The session keeps everything, so
// what a recall finds survives restarts.
func (s *Session) Recall(ctx context.Context, ref string) (text string, found bool, err error) {
	if strings.HasPrefix(ref, "sum-") {
		return s.recallSummary(ctx, ref)
	}
	entries, err := s.Transcript(ctx)
	if err != nil {
		return "", false, err
	}
	for i := len(entries) - 1; i >= 0; i-- {
		for _, p := range entries[i].Message.Parts {
			if r, ok := p.(processor.ToolReturn); ok && r.ToolCallID == ref {
				return r.ToolReturnContent(), true, nil
			}
		}
	}
	return "", false, nil
}

// recallSummary returns the messages the compaction that inserted the
// marker with reference ref removed.
func (s *Session) recallSummary(ctx context.Context, ref string) (string, bool, error) {
	comps, err := s.Compactions(ctx)
	if err != nil {
		return "", false, err
	}
	var target *Compaction
	inserted := map[int64]processor.Message{} // every synthetic message, by seq
	for i := range comps {
		for _, e := range comps[i].Inserted {
			inserted[e.Seq] = e.Message
			if _, r, ok := summary.ParseMarker(e.Message); ok && r == ref && target == nil {
				target = &comps[i]
			}
		}
	}
	if target == nil {
		return "", false, nil
	}
	entries, err := s.Transcript(ctx)
	if err != nil {
		return "", false, err
	}
	bySeq := make(map[int64]processor.Message, len(entries))
	for _, e := range entries {
		bySeq[e.Seq] = e.Message
	}
	seqs := slices.Concat(target.Covered, target.Superseded)
	slices.Sort(seqs)
	var msgs []processor.Message
	for _, seq := range seqs {
		if m, ok := bySeq[seq]; ok {
			msgs = append(msgs, m)
		} else if m, ok := inserted[seq]; ok {
			msgs = append(msgs, m)
		}
	}
	return summary.Lines(msgs), true, nil
}
