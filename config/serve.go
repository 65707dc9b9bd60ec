package config

import (
	"net"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/model/anthropic"
	"github.com/abridge-go/abridge/model/openai"
)

// Values of ABRIDGE_SERVE_SUMMARIZE_FOR (Config.ServeSummarizeFor), the
// proxy's Options.SummarizeFor: for which requests abridge serve's
// summarizer calls its model.
const (
	summarizeAccepted   = "accepted"   // requests whose credential the upstream has accepted before
	summarizeCredential = "credential" // requests that carry a credential
	summarizeAll        = "all"        // every request
)

// DefaultUpstream is the base URL abridge serve forwards to when
// OPENAI_BASE_URL is unset: the OpenAI API.
const DefaultUpstream = "https://api.openai.com/v1"

// DefaultAnthropicUpstream is the base URL abridge serve forwards
// Anthropic Messages requests to when ANTHROPIC_BASE_URL is unset.
const DefaultAnthropicUpstream = "https://api.anthropic.com/v1"

// AnthropicUpstream returns the base URL abridge serve forwards Anthropic
// Messages requests to: ANTHROPIC_BASE_URL with /v1 added (Anthropic's
// clients name the server, and put /v1 in each path), else
// DefaultAnthropicUpstream.
func (c *Config) AnthropicUpstream() string {
	if c.anthropicBaseURL == "" {
		return DefaultAnthropicUpstream
	}
	base := strings.TrimSuffix(c.anthropicBaseURL, "/")
	if strings.HasSuffix(base, "/v1") {
		return base
	}
	return base + "/v1"
}

// Upstream returns the base URL abridge serve forwards requests to:
// OPENAI_BASE_URL, else DefaultUpstream.
func (c *Config) Upstream() string {
	if c.openAIBaseURL != "" {
		return c.openAIBaseURL
	}
	return DefaultUpstream
}

// SummaryKeySet reports whether the summarizer has an API key of its own:
// ABRIDGE_SUMMARY_API_KEY or OPENAI_API_KEY is set. Without one, abridge
// serve's summaries are paid with the Authorization of the client whose
// conversation is summarized.
func (c *Config) SummaryKeySet() bool {
	return c.summaryKey() != ""
}

// SummaryModelOptions returns the options Components.SummaryModel, the
// summarizer's model, is built with (its name, endpoint, key, stream idle
// timeout and logger), for a host that adds its own (an HTTP client, say)
// before openai.New.
func (c *Config) SummaryModelOptions(logger *zap.Logger) []openai.Option {
	return c.openAIOptions(c.summaryModel(), c.summaryBaseURL(), c.summaryKey(), logger)
}

// SummaryEndpoint returns the base URL of abridge serve's summaries in the
// OpenAI APIs (Chat Completions, Responses): ABRIDGE_SUMMARY_BASE_URL,
// else the upstream ([Config.Upstream]).
func (c *Config) SummaryEndpoint() string {
	if c.SummaryBaseURL != "" {
		return c.SummaryBaseURL
	}
	return c.Upstream()
}

// AnthropicSummaryModelOptions returns the options of the model abridge
// serve summarizes an Anthropic Messages client's conversations with, for
// anthropic.New: ABRIDGE_SUMMARY_ANTHROPIC_MODEL on the Anthropic
// upstream ([Config.AnthropicUpstream]), with no key (the host adds the
// client's), the stream idle timeout and logger.
func (c *Config) AnthropicSummaryModelOptions(logger *zap.Logger) []anthropic.Option {
	opts := []anthropic.Option{anthropic.WithModel(c.SummaryAnthropicModel), anthropic.WithStreamIdleTimeout(c.StreamIdleTimeout),
		// The SDK puts /v1 in each path.
		anthropic.WithBaseURL(strings.TrimSuffix(c.AnthropicUpstream(), "/v1"))}
	if logger != nil {
		opts = append(opts, anthropic.WithLogger(logger))
	}
	return opts
}

// validAddr reports whether s is HOST:PORT with a port from 0 to 65535.
func validAddr(s string) bool {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 0 && n <= 65535
}
