package openai

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/summarizer"
)

// Compact is compact.Compact for a history of openai-go message
// params, for a host that keeps its history in openai-go's types. It
// converts them with [FromParams], compacts with s (the LLM summarizer of
// package summarizer/llm, the offline digest of package summarizer, or what
// config builds), following focus when it is not empty, and converts the
// result back with [ToParams]: the leading system (or developer) messages,
// a user message holding the summary marker, and an assistant message with
// compact.Acknowledgement. The caller's slice is never modified.
func Compact(ctx context.Context, s summarizer.Summarizer, history []openai.ChatCompletionMessageParamUnion, focus string) ([]openai.ChatCompletionMessageParamUnion, compact.Report, error) {
	msgs, err := FromParams(history)
	if err != nil {
		return nil, compact.Report{MessagesBefore: len(history)}, fmt.Errorf("convert history: %w", err)
	}
	out, rep, err := compact.Compact(ctx, s, msgs, focus)
	if err != nil {
		return nil, rep, err
	}
	params, err := ToParams(out)
	if err != nil {
		return nil, rep, fmt.Errorf("convert compacted history: %w", err)
	}
	return params, rep, nil
}
