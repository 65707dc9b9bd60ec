package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
)

// runEnv is what a command builds from the environment.
type runEnv struct {
	cfg    *config.Config
	logger *zap.Logger
}

// setup reads the configuration from the command's environment and builds
// the logger, which writes to the command's stderr.
//
// The CLI logs at warn level unless ABRIDGE_LOG_LEVEL says otherwise: what
// the processors do is shown as status lines instead.
func (c *cli) setup() (*runEnv, error) {
	environ := c.environ
	if strings.TrimSpace(environ[logLevelVar]) == "" {
		environ = maps.Clone(environ)
		environ[logLevelVar] = "warn"
	}
	cfg, err := config.LoadFrom(environ)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	logger, err := cfg.LoggerTo(c.stderr)
	if err != nil {
		return nil, fmt.Errorf("logger: %w", err)
	}
	return &runEnv{cfg: cfg, logger: logger}, nil
}

func (e *runEnv) close() { _ = e.logger.Sync() }

const logLevelVar = config.Prefix + "LOG_LEVEL"

// noteDigest says, on stderr, that summaries come from the offline digest
// and why.
func (c *cli) noteDigest(env *runEnv, extra string) {
	why := "no model endpoint configured (" + config.EnvOpenAIKey + ", " + config.EnvOpenAIBaseURL + ")"
	if env.cfg.Endpoint() {
		why = config.Prefix + "SUMMARIZER=" + env.cfg.Summarizer
	}
	c.note(why + ": summarizing with the offline digest" + extra)
}

// digestNoted returns s, the offline digest, saying so (noteDigest) before
// the first summary it writes: a command that fails first, or never
// summarizes, does not say it.
func (c *cli) digestNoted(env *runEnv, s summarizer.Summarizer, extra string) summarizer.Summarizer {
	return &notedSummarizer{Summarizer: s, say: func() { c.noteDigest(env, extra) }}
}

// notedSummarizer calls say once, before the first summary it writes.
type notedSummarizer struct {
	summarizer.Summarizer
	once sync.Once
	say  func()
}

func (n *notedSummarizer) Summarize(ctx context.Context, messages []processor.Message, previous, focus string) (string, error) {
	n.once.Do(n.say)
	return n.Summarizer.Summarize(ctx, messages, previous, focus)
}

// primaryEndpoint reports whether the primary model's endpoint is
// configured: OPENAI_API_KEY or OPENAI_BASE_URL set. ABRIDGE_SUMMARY_BASE_URL,
// which [config.Config.Endpoint] counts too, configures only the
// summarizer's.
func (c *cli) primaryEndpoint() bool {
	return c.environ[config.EnvOpenAIKey] != "" || strings.TrimSpace(c.environ[config.EnvOpenAIBaseURL]) != ""
}

// note prints one status line on stderr.
func (c *cli) note(msg string) {
	fmt.Fprintf(c.stderr, "abridge: %s\n", msg)
}

// status prints a status line on stderr, dim when stderr is a terminal.
func (c *cli) status(msg string) {
	if c.color() {
		fmt.Fprintf(c.stderr, "\x1b[2m%s\x1b[0m\n", msg)
		return
	}
	fmt.Fprintln(c.stderr, msg)
}

// color reports whether stderr is a terminal that takes escape codes.
func (c *cli) color() bool {
	if _, ok := c.environ["NO_COLOR"]; ok || c.environ["TERM"] == "dumb" {
		return false
	}
	return isTerminal(c.stderr)
}

// isTerminal reports whether v, a stream, is a terminal; a stream that
// wraps another (an Unwrap method) is the one it wraps.
func isTerminal(v any) bool {
	if u, ok := v.(interface{ Unwrap() io.Writer }); ok {
		v = u.Unwrap()
	}
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress draws replay progress on one terminal line, at most ten times a
// second and only once a run has taken longer than a second. It draws
// nothing when stderr is not a terminal.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	on      bool
	start   time.Time
	last    time.Time
	drawn   bool
	now     func() time.Time
	minimum time.Duration
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, on: isTerminal(w), start: time.Now(), now: time.Now, minimum: time.Second}
}

// update shows that done of total steps of file are replayed; a call with
// total 0 clears the line.
func (p *progress) update(file string, done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on {
		return
	}
	if total == 0 {
		if p.drawn {
			fmt.Fprint(p.w, "\r\x1b[K")
			p.drawn = false
		}
		return
	}
	now := p.now()
	if now.Sub(p.start) < p.minimum || (now.Sub(p.last) < 100*time.Millisecond && done != total) {
		return
	}
	p.last = now
	name := file
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	if len(name) > 48 {
		name = name[:45] + "..."
	}
	fmt.Fprintf(p.w, "\r\x1b[Kreplaying %s %d/%d", name, done, total)
	p.drawn = true
}
