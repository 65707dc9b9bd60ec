package openaitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
)

// Messages decodes msgs, Chat Completions messages, into openai-go's
// message params, as a client building a request from its history does.
func Messages(msgs []json.RawMessage) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for _, raw := range msgs {
		var m openai.ChatCompletionMessageParamUnion
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("message %s: %w", raw, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// Ask sends params with client, streamed when stream is set (asking for
// the usage in the stream), and returns the answer's text and usage.
func Ask(ctx context.Context, client openai.Client, params openai.ChatCompletionNewParams, stream bool) (string, openai.CompletionUsage, error) {
	if !stream {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return "", openai.CompletionUsage{}, err
		}
		if len(resp.Choices) == 0 {
			return "", resp.Usage, fmt.Errorf("answer without choices")
		}
		return resp.Choices[0].Message.Content, resp.Usage, nil
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		return "", openai.CompletionUsage{}, fmt.Errorf("stream: %w", err)
	}
	if len(acc.Choices) == 0 {
		return "", acc.Usage, fmt.Errorf("streamed answer without choices")
	}
	return acc.Choices[0].Message.Content, acc.Usage, nil
}

// ReadAll returns resp's body, read whole, and closes it. err is the error
// of the request that gave resp: ReadAll fails tb when it or the read is
// not nil.
func ReadAll(tb testing.TB, resp *http.Response, err error) []byte {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
