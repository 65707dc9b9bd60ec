package config

import (
	"slices"
	"strconv"
	"strings"

	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/strategy"
)

// Variable documents one environment variable.
type Variable struct {
	// Name is the variable's name, e.g. ABRIDGE_TRIM_MAX_CHARS.
	Name string
	// Default is the value used when the variable is unset or empty: a
	// literal value, or a description in parentheses, such as
	// "(ABRIDGE_MODEL)" for "the value of ABRIDGE_MODEL".
	Default string
	// Accepted describes the accepted values.
	Accepted string
	// Description says what the variable sets.
	Description string
	// Group names the part of abridge the variable configures; a command
	// that uses that part reads every variable of the group.
	Group Group
	// Deprecated lists the variable's former names: each is still read,
	// when the variable itself is unset or empty, and will be removed.
	Deprecated []string
}

// Group names the part of abridge a [Variable] configures.
type Group string

// The groups of variables.
const (
	// GroupModel: the models, their endpoints and the summarizer.
	GroupModel Group = "model"
	// GroupProcessors: the trimmer and the window (the strategy, triggers
	// and what is kept), which change what every request holds.
	GroupProcessors Group = "processors"
	// GroupAgent: the agent loop's limits.
	GroupAgent Group = "agent"
	// GroupSession: where sessions and shared summaries are stored.
	GroupSession Group = "session"
	// GroupServe: the proxy's listener and limits.
	GroupServe Group = "serve"
	// GroupLog: logging.
	GroupLog Group = "log"
)

// VariablesIn returns the variables of the given groups, in the order of
// [Variables].
func VariablesIn(groups ...Group) []Variable {
	var out []Variable
	for _, v := range Variables() {
		if slices.Contains(groups, v.Group) {
			out = append(out, v)
		}
	}
	return out
}

// Variables returns every variable abridge reads, in the order of docs/configuration.md.
func Variables() []Variable {
	out := make([]Variable, len(variables))
	for i, v := range variables {
		out[i] = v.Variable
		out[i].Deprecated = slices.Clone(v.Deprecated)
	}
	return out
}

// variable is a Variable with what Load needs to check and show it.
type variable struct {
	Variable
	// field is the Config field it sets, "" for the OPENAI_ ones.
	field string
	// kind names what a value must parse as, after "not ".
	kind string
	// problem says what a value failing valid is.
	problem string
	// valid reports whether the field's value is accepted; nil accepts
	// everything.
	valid func(c *Config) bool
	// show formats the field's value, unredacted.
	show func(c *Config) string
	// secret marks a value never shown, only whether it is set.
	secret bool
	// dsn marks a value that may hold a password in a URL or DSN.
	dsn bool
}

const (
	outOfRange   = "out of range"
	unknownValue = "unknown value"
)

func itoa(f func(c *Config) int) func(c *Config) string {
	return func(c *Config) string { return strconv.Itoa(f(c)) }
}

func oneOf(s string, values ...string) bool {
	for _, v := range values {
		if s == v {
			return true
		}
	}
	return false
}

// variables lists every variable in the order of docs/configuration.md.
var variables = []variable{
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "STRATEGY", Default: "default", Accepted: "default, economy, budget, or budget-Nk (a budget of N thousand tokens)",
			Description: "The processors' configuration: default (trim at 2000, compact above 40 messages keeping the last 20), economy (the cheapest on billed input: trim at 1000, compact above 24 keeping the last 6, clearing their outputs but the last round's) or budget (compact once the prompt passes the budget, 30,000 tokens or N thousand: a small budget bills less, a large one keeps more). Each keeps the facts of what it compacts beside the summary. It sets the defaults of ABRIDGE_TRIM_MAX_CHARS, ABRIDGE_MAX_MESSAGES, ABRIDGE_KEEP_MESSAGES, ABRIDGE_TAIL_OUTPUTS, ABRIDGE_TRIGGER_TOKENS, ABRIDGE_FACTS_CHARS and ABRIDGE_SUMMARY_CLIP; those set explicitly win.",
		},
		field: "Strategy", kind: "a string", problem: unknownValue,
		valid: func(c *Config) bool { _, err := strategy.ByName(c.Strategy); return err == nil },
		show:  func(c *Config) string { return c.Strategy },
	},
	{
		Variable: Variable{
			Group: GroupModel, Name: Prefix + "MODEL", Default: "gpt-4.1-mini", Accepted: "a non-empty model name",
			Description: "Primary model, used by the agent and by on-demand compaction.",
		},
		field: "Model", kind: "a string", problem: "empty",
		valid: func(c *Config) bool { return c.Model != "" },
		show:  func(c *Config) string { return c.Model },
	},
	{
		Variable: Variable{
			Group: GroupModel, Name: Prefix + "SUMMARY_MODEL", Default: "(ABRIDGE_MODEL)", Accepted: "a model name",
			Description: "Model the window's summarizer calls.",
		},
		field: "SummaryModel", kind: "a string",
		show: func(c *Config) string { return c.SummaryModel },
	},
	{
		Variable: Variable{
			Group: GroupModel, Name: Prefix + "SUMMARY_ANTHROPIC_MODEL", Default: "claude-haiku-4-5", Accepted: "a non-empty model name",
			Description: "Model abridge serve's summarizer calls on the Anthropic upstream (ANTHROPIC_BASE_URL) for an Anthropic Messages client, paid with that client's key, when the proxy has no API key of its own.",
		},
		field: "SummaryAnthropicModel", kind: "a string", problem: "empty",
		valid: func(c *Config) bool { return c.SummaryAnthropicModel != "" },
		show:  func(c *Config) string { return c.SummaryAnthropicModel },
	},
	{
		Variable: Variable{
			Group: GroupModel, Name: Prefix + "SUMMARY_BASE_URL", Default: "(OPENAI_BASE_URL)", Accepted: "an http or https URL",
			Description: "Endpoint of the summarizer's model. Setting it counts as a configured endpoint.",
		},
		field: "SummaryBaseURL", kind: "a string", problem: "not an http or https URL", dsn: true,
		valid: func(c *Config) bool { return c.SummaryBaseURL == "" || validURL(c.SummaryBaseURL) },
		show:  func(c *Config) string { return c.SummaryBaseURL },
	},
	{
		Variable: Variable{
			Group: GroupModel, Name: Prefix + "SUMMARY_API_KEY", Default: "(OPENAI_API_KEY)", Accepted: "an API key",
			Description: "API key of the summarizer's endpoint. Never printed or logged.",
		},
		field: "SummaryAPIKey", kind: "a string", secret: true,
		show: func(c *Config) string { return c.SummaryAPIKey },
	},
	{
		Variable: Variable{
			Group: GroupModel, Name: Prefix + "SUMMARY_TIMEOUT", Default: "90s", Accepted: "a positive duration with a unit (90s, 2m)",
			Description: "Time limit of one summary, retries included; on expiry the window falls back to the digest.",
		},
		field: "SummaryTimeout", kind: "a duration", problem: outOfRange,
		valid: func(c *Config) bool { return c.SummaryTimeout > 0 },
		show:  func(c *Config) string { return c.SummaryTimeout.String() },
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "TRIM_MAX_CHARS", Default: "2000", Accepted: "an integer ≥ " + strconv.Itoa(trimtools.MinMaxChars) + ", 0 for the default, or -1 to disable trimming",
			Description: "Old tool outputs longer than this many characters are truncated. Its former name, ABRIDGE_TRIM_CHARS, is still read when it is unset (deprecated).",
			Deprecated:  []string{Prefix + "TRIM_CHARS"},
		},
		field: "TrimMaxChars", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool {
			return c.TrimMaxChars == -1 || c.TrimMaxChars == 0 || c.TrimMaxChars >= trimtools.MinMaxChars
		},
		show: itoa(func(c *Config) int { return c.TrimMaxChars }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "MAX_MESSAGES", Default: "40", Accepted: "an integer ≥ 1, 0 for the default, or -1 to disable this trigger",
			Description: "The window compacts a history longer than this many messages, keeping the first run and the last ABRIDGE_KEEP_MESSAGES messages.",
		},
		field: "MaxMessages", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.MaxMessages >= -1 },
		show:  itoa(func(c *Config) int { return c.MaxMessages }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "KEEP_MESSAGES", Default: "0", Accepted: "an integer ≥ 0; 0 means max(4, N/2), N being ABRIDGE_MAX_MESSAGES (40 when it is -1)",
			Description: "How many recent messages the window keeps after a compaction (moved back so no tool call is parted from its returns).",
		},
		field: "KeepMessages", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.KeepMessages >= 0 },
		show:  itoa(func(c *Config) int { return c.KeepMessages }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "TAIL_OUTPUTS", Default: "0", Accepted: "an integer ≥ 0; 0 clears nothing",
			Description: "When positive, each compaction replaces the tool outputs of the kept messages but those of their last N tool rounds by placeholders, and folds what they held into the summary.",
		},
		field: "TailOutputs", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.TailOutputs >= 0 },
		show:  itoa(func(c *Config) int { return c.TailOutputs }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "CONTEXT_WINDOW", Default: "0", Accepted: "an integer ≥ 0; 0 disables this trigger",
			Description: "The model's context window in tokens, for the token trigger.",
		},
		field: "ContextWindow", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.ContextWindow >= 0 },
		show:  itoa(func(c *Config) int { return c.ContextWindow }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "TRIGGER_PERCENT", Default: "70", Accepted: "an integer from 1 to 100",
			Description: "The window compacts once the estimated prompt passes this percentage of ABRIDGE_CONTEXT_WINDOW. Its former name, ABRIDGE_THRESHOLD_PERCENT, is still read when it is unset (deprecated).",
			Deprecated:  []string{Prefix + "THRESHOLD_PERCENT"},
		},
		field: "TriggerPercent", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.TriggerPercent >= 1 && c.TriggerPercent <= 100 },
		show:  itoa(func(c *Config) int { return c.TriggerPercent }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "TRIGGER_TOKENS", Default: "0", Accepted: "an integer ≥ 0; 0 disables this trigger",
			Description: "The window compacts once the estimated prompt passes this many tokens, whatever ABRIDGE_CONTEXT_WINDOW says.",
		},
		field: "TriggerTokens", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.TriggerTokens >= 0 },
		show:  itoa(func(c *Config) int { return c.TriggerTokens }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "FACTS_CHARS", Default: "2000", Accepted: "an integer ≥ 200, 0 for the default, or -1 to leave the facts out",
			Description: "Bound, in characters, of the facts each summary carries beside its prose, kept verbatim and rolling: the user's messages, the files edited and read, the commands run, the errors met and the names used in what was compacted.",
		},
		field: "FactsChars", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.FactsChars == -1 || c.FactsChars == 0 || c.FactsChars >= 200 },
		show:  itoa(func(c *Config) int { return c.FactsChars }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "SUMMARY_CLIP", Default: "300", Accepted: "an integer ≥ 1, 0 for the default, or -1 to give every text whole",
			Description: "Each text the summarizer is given (a tool output, an assistant's text, a user prompt) is clipped to this many characters, its head and tail; the facts keep the exact paths, commands, errors and names of the whole texts.",
		},
		field: "SummaryClip", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.SummaryClip >= -1 },
		show:  itoa(func(c *Config) int { return c.SummaryClip }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "KEEP_USER_TURNS", Default: "0", Accepted: "an integer ≥ 0",
			Description: "When positive, the window's tail is the last N user turns and everything after them, instead of the last ABRIDGE_KEEP_MESSAGES messages.",
		},
		field: "KeepUserTurns", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.KeepUserTurns >= 0 },
		show:  itoa(func(c *Config) int { return c.KeepUserTurns }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "AHEAD", Default: "5", Accepted: "an integer ≥ 1, or -1 to write each summary when its compaction is due",
			Description: "How many requests ahead of a trigger the window starts writing, in the background, the summary its compaction will need, so that no request waits for a summarizer; when it is not ready in time, requests go out uncompacted (billed in full) until it is, within ABRIDGE_HARD_MESSAGES and ABRIDGE_HARD_TOKENS.",
		},
		field: "Ahead", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.Ahead == -1 || c.Ahead >= 1 },
		show:  itoa(func(c *Config) int { return c.Ahead }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "HARD_MESSAGES", Default: "0", Accepted: "an integer ≥ 1, 0 for twice ABRIDGE_MAX_MESSAGES, or -1 for no bound but the provider's",
			Description: "Most messages a request may hold and still go out uncompacted while its summary is being written; past it, the request waits for the summary.",
		},
		field: "HardMessages", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.HardMessages >= -1 },
		show:  itoa(func(c *Config) int { return c.HardMessages }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "HARD_TOKENS", Default: "0", Accepted: "an integer ≥ 1, 0 for the default, or -1 for no bound but the provider's",
			Description: "Most estimated prompt tokens a request may hold and still go out uncompacted while its summary is being written; past it, the request waits for the summary. 0 means 95% of ABRIDGE_CONTEXT_WINDOW when set, else twice ABRIDGE_TRIGGER_TOKENS when set, else no bound.",
		},
		field: "HardTokens", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.HardTokens >= -1 },
		show:  itoa(func(c *Config) int { return c.HardTokens }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "SUMMARY_WORKERS", Default: "64", Accepted: "an integer from 1 to 1024",
			Description: "How many summaries are written in the background at once (each waits on a model, using no CPU meanwhile); the payers with summaries waiting take turns.",
		},
		field: "SummaryWorkers", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.SummaryWorkers >= 1 && c.SummaryWorkers <= 1024 },
		show:  itoa(func(c *Config) int { return c.SummaryWorkers }),
	},
	{
		Variable: Variable{
			Group: GroupProcessors, Name: Prefix + "SUMMARY_QUEUE", Default: "1024", Accepted: "an integer from 1 to 1048576",
			Description: "Most summaries waiting for a background worker, each payer holding an eighth of them at most; a summary that finds no room is written when its compaction is due.",
		},
		field: "SummaryQueue", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.SummaryQueue >= 1 && c.SummaryQueue <= 1<<20 },
		show:  itoa(func(c *Config) int { return c.SummaryQueue }),
	},
	{
		Variable: Variable{
			Group: GroupSession, Name: Prefix + "SUMMARY_CLAIM_TTL", Default: "30s", Accepted: "a positive duration with a unit (30s, 1m)",
			Description: "How long a process's claim on a summary it is writing lasts unrenewed in a shared session database (renewed every third of it): the replicas sharing it write each summary once, and when the writer dies another takes over once its claim has run out.",
		},
		field: "SummaryClaimTTL", kind: "a duration", problem: outOfRange,
		valid: func(c *Config) bool { return c.SummaryClaimTTL > 0 },
		show:  func(c *Config) string { return c.SummaryClaimTTL.String() },
	},
	{
		Variable: Variable{
			Group: GroupModel, Name: Prefix + "SUMMARIZER", Default: "auto", Accepted: "auto, llm or digest",
			Description: "Who writes summaries: llm (a model call), digest (offline, no network), or auto: llm when an endpoint is configured (OPENAI_API_KEY, OPENAI_BASE_URL or ABRIDGE_SUMMARY_BASE_URL set), else digest.",
		},
		field: "Summarizer", kind: "a string", problem: unknownValue,
		valid: func(c *Config) bool {
			return oneOf(c.Summarizer, SummarizerAuto, SummarizerLLM, SummarizerDigest)
		},
		show: func(c *Config) string { return c.Summarizer },
	},
	{
		Variable: Variable{
			Group: GroupAgent, Name: Prefix + "MAX_STEPS", Default: "25", Accepted: "an integer ≥ 1",
			Description: "Most model requests in one agent turn.",
		},
		field: "MaxSteps", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.MaxSteps >= 1 },
		show:  itoa(func(c *Config) int { return c.MaxSteps }),
	},
	{
		Variable: Variable{
			Group: GroupAgent, Name: Prefix + "REQUEST_TIMEOUT", Default: "5m", Accepted: "a positive duration with a unit (90s, 2m)",
			Description: "Time limit of one model request of the agent (each request of a chat turn), retries included; on expiry the turn fails.",
		},
		field: "RequestTimeout", kind: "a duration", problem: outOfRange,
		valid: func(c *Config) bool { return c.RequestTimeout > 0 },
		show:  func(c *Config) string { return c.RequestTimeout.String() },
	},
	{
		Variable: Variable{
			Group: GroupAgent, Name: Prefix + "STREAM_IDLE_TIMEOUT", Default: "2m", Accepted: "a positive duration with a unit (90s, 2m)",
			Description: "Longest silence of a streamed model response (the chat's): a stream that sends nothing for this long is cut off, and tried again while none of its text was shown.",
		},
		field: "StreamIdleTimeout", kind: "a duration", problem: outOfRange,
		valid: func(c *Config) bool { return c.StreamIdleTimeout > 0 },
		show:  func(c *Config) string { return c.StreamIdleTimeout.String() },
	},
	{
		Variable: Variable{
			Group: GroupSession, Name: Prefix + "SESSION_DB", Default: "(a SQLite file)", Accepted: "a file path, sqlite:PATH, a postgres:// or postgresql:// URL, or a PostgreSQL keyword/value string (host=… dbname=…; anything starting with a word and =) (no other scheme, no :memory: or file: URI)",
			Description: "Where sessions are stored, and the summaries abridge serve writes (replicas on one PostgreSQL database share them). A SQLite file's directory must exist, unless it is abridge's default one, which is created. A password in it is never printed or logged.",
		},
		field: "SessionDB", kind: "a string", dsn: true,
		show: func(c *Config) string { return c.SessionDB },
	},
	{
		Variable: Variable{
			Group: GroupServe, Name: Prefix + "SERVE_ADDR", Default: "127.0.0.1:8787", Accepted: "HOST:PORT, the port from 0 to 65535 (0: any free port; an empty HOST: every interface)",
			Description: "Where abridge serve listens. The --addr flag wins over it.",
		},
		field: "ServeAddr", kind: "a string", problem: "not HOST:PORT",
		valid: func(c *Config) bool { return validAddr(c.ServeAddr) },
		show:  func(c *Config) string { return c.ServeAddr },
	},
	{
		Variable: Variable{
			Group: GroupServe, Name: Prefix + "SERVE_MAX_BODY_MB", Default: "32", Accepted: "an integer from 1 to 1024",
			Description: "Largest request body abridge serve accepts for an API it processes (Chat Completions, Responses, Messages), in MiB; a larger one is answered 413 naming this variable and sent nowhere.",
		},
		field: "ServeMaxBodyMB", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.ServeMaxBodyMB >= 1 && c.ServeMaxBodyMB <= 1024 },
		show:  itoa(func(c *Config) int { return c.ServeMaxBodyMB }),
	},
	{
		Variable: Variable{
			Group: GroupServe, Name: Prefix + "SERVE_BODY_MEMORY_MB", Default: "256", Accepted: "an integer from 1 to 65536 (raised to twice ABRIDGE_SERVE_MAX_BODY_MB when smaller)",
			Description: "Most memory, in MiB, that the request bodies abridge serve processes may take at once: each body twice its bytes as they arrive (a body must arrive within a minute, else 408), then what decoding and processing it take, from its bytes and its JSON tokens (about 4 bytes a byte and 1,000 a token, of which 2 a byte and 64 a token stay held while the answer is awaited). A body waits for room until its minute is up, then gets 503; a request that finds no more room once it holds some gets 503 at once; one that would need more than the whole budget (a history of a million tiny messages) gets 413 naming this variable.",
		},
		field: "ServeBodyMemoryMB", kind: "an integer", problem: outOfRange,
		valid: func(c *Config) bool { return c.ServeBodyMemoryMB >= 1 && c.ServeBodyMemoryMB <= 65536 },
		show:  itoa(func(c *Config) int { return c.ServeBodyMemoryMB }),
	},
	{
		Variable: Variable{
			Group: GroupServe, Name: Prefix + "SERVE_TIMEOUT", Default: "10m", Accepted: "a positive duration with a unit (90s, 10m)",
			Description: "Time limit of one request through abridge serve, summaries and the upstream's whole answer (a stream included) counted; past it the client gets a 504.",
		},
		field: "ServeTimeout", kind: "a duration", problem: outOfRange,
		valid: func(c *Config) bool { return c.ServeTimeout > 0 },
		show:  func(c *Config) string { return c.ServeTimeout.String() },
	},
	{
		Variable: Variable{
			Group: GroupServe, Name: Prefix + "SERVE_SHUTDOWN_TIMEOUT", Default: "30s", Accepted: "a positive duration with a unit (30s, 2m)",
			Description: "How long abridge serve, told to stop (SIGTERM, Ctrl-C), lets the requests in flight finish before it closes their connections.",
		},
		field: "ServeShutdownTimeout", kind: "a duration", problem: outOfRange,
		valid: func(c *Config) bool { return c.ServeShutdownTimeout > 0 },
		show:  func(c *Config) string { return c.ServeShutdownTimeout.String() },
	},
	{
		Variable: Variable{
			Group: GroupServe, Name: Prefix + "SERVE_SUMMARIZE_FOR", Default: summarizeAccepted, Accepted: "accepted, credential or all",
			Description: "For which requests abridge serve's summarizer calls its model: accepted, those whose credential (Authorization, api-key or x-api-key header) the upstream has accepted before, answering a POST carrying it with a 2xx (with no API key of the proxy's own, no credential counts as one); credential, those carrying one (or any, with no key of the proxy's own); all, every request. The others are compacted with the offline digest, and nothing is stored for them.",
		},
		field: "ServeSummarizeFor", kind: "a string", problem: unknownValue,
		valid: func(c *Config) bool {
			return oneOf(c.ServeSummarizeFor, summarizeAccepted, summarizeCredential, summarizeAll)
		},
		show: func(c *Config) string { return c.ServeSummarizeFor },
	},
	{
		Variable: Variable{
			Group: GroupServe, Name: Prefix + "UI_TOKEN", Default: "(none)", Accepted: "a token (any non-empty text; a long random one)",
			Description: "Token of abridge serve's operator's page (/ui/, which shows the conversations' content): every request must bring it, as Authorization: Bearer TOKEN or once as ?token=TOKEN (which sets an HttpOnly, SameSite=Strict cookie), else it is answered 401. Unset, the page is served only when abridge serve listens on a loopback address, and is off otherwise. Never printed or logged.",
		},
		field: "UIToken", kind: "a string", secret: true,
		show: func(c *Config) string { return c.UIToken },
	},
	{
		Variable: Variable{
			Group: GroupLog, Name: Prefix + "LOG_LEVEL", Default: "info", Accepted: "debug, info, warn or error",
			Description: "Least severe level logged (to stderr). The abridge CLI logs at warn when it is unset.",
		},
		field: "LogLevel", kind: "a string", problem: unknownValue,
		valid: func(c *Config) bool { return oneOf(c.LogLevel, "debug", "info", "warn", "error") },
		show:  func(c *Config) string { return c.LogLevel },
	},
	{
		Variable: Variable{
			Group: GroupLog, Name: Prefix + "LOG_FORMAT", Default: "console", Accepted: "console or json",
			Description: "Log line format.",
		},
		field: "LogFormat", kind: "a string", problem: unknownValue,
		valid: func(c *Config) bool { return oneOf(c.LogFormat, "console", "json") },
		show:  func(c *Config) string { return c.LogFormat },
	},
	{
		Variable: Variable{
			Group: GroupModel, Name: EnvOpenAIKey, Default: "(none)", Accepted: "an API key",
			Description: "API key of the primary endpoint, read by the OpenAI client. Setting it counts as a configured endpoint. Never printed or logged.",
		},
		secret: true,
		show:   func(c *Config) string { return c.openAIKey },
	},
	{
		Variable: Variable{
			Group: GroupModel, Name: EnvOpenAIBaseURL, Default: "(the OpenAI API)", Accepted: "an http or https URL",
			Description: "Primary endpoint, read by the OpenAI client (any server speaking the Chat Completions API), and the upstream abridge serve forwards to. Setting it counts as a configured endpoint.",
		},
		problem: "not an http or https URL", dsn: true,
		valid: func(c *Config) bool { return c.openAIBaseURL == "" || validURL(c.openAIBaseURL) },
		show:  func(c *Config) string { return c.openAIBaseURL },
	},
	{
		Variable: Variable{
			Group: GroupServe, Name: EnvAnthropicBaseURL, Default: "(the Anthropic API)", Accepted: "an http or https URL",
			Description: "The upstream abridge serve forwards Anthropic Messages requests (/v1/messages and the paths under it) to, as Anthropic's clients name it: without /v1.",
		},
		problem: "not an http or https URL", dsn: true,
		valid: func(c *Config) bool { return c.anthropicBaseURL == "" || validURL(c.anthropicBaseURL) },
		show:  func(c *Config) string { return c.anthropicBaseURL },
	},
}

// byField returns the variable that sets a Config field, or nil.
func byField(field string) *variable {
	for i := range variables {
		if variables[i].field == field {
			return &variables[i]
		}
	}
	return nil
}

// markdownTable renders the variables as the Markdown table of docs/configuration.md.
func markdownTable() string {
	var b strings.Builder
	b.WriteString("| Variable | Default | Accepted values | What it sets |\n")
	b.WriteString("| --- | --- | --- | --- |\n")
	for _, v := range variables {
		b.WriteString("| `" + v.Name + "` | " + mdDefault(v.Default) + " | " + v.Accepted + " | " + v.Description + " |\n")
	}
	return b.String()
}

// mdDefault shows a literal default as code and a described one as text.
func mdDefault(d string) string {
	if strings.HasPrefix(d, "(") {
		inner := strings.TrimSuffix(strings.TrimPrefix(d, "("), ")")
		if strings.HasPrefix(inner, Prefix) || strings.HasPrefix(inner, "OPENAI_") {
			return "same as `" + inner + "`"
		}
		return inner
	}
	return "`" + d + "`"
}
