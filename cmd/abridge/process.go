package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/transcript"
)

var processCommand = &command{
	name:    "process",
	summary: "run the processor chain once on a history and print the result",
	usage:   "abridge process FILE",
	about: `Process runs abridge's processor chain (tool-return trimming, then the
window) once on the history in FILE, as an agent would before sending it,
and prints the processed history as OpenAI JSON on stdout. What changed
goes to stderr: messages and estimated tokens before and after (on the
basis compact uses), the tool returns the trimmer shortened (those the
window then summarized included), and whether the window compacted, with
the sizes of what it was given. FILE "-" is read from stdin.

A history that ends with the model's response is processed up to its last
request, as it was before that response was asked for; the messages after
it are kept as they are. A history with unanswered tool calls or orphaned
tool returns is repaired first, and the repairs are reported.`,
	env:   []config.Group{config.GroupModel, config.GroupProcessors, config.GroupLog},
	flags: processFlags,
}

func processFlags(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		// While a summary is written, a line on stderr, when it is a
		// terminal, shows for how long; what else goes there erases it.
		wait := c.waitLine(c.stderr)
		defer wait.stop()
		path, history, env, err := c.historyCommand("process", args)
		if err != nil {
			return err
		}
		defer env.close()

		hint := fmt.Sprintf("the digest takes over after %s", env.cfg.SummaryTimeout)
		events := windowEvents{on: func(ev window.Event) { wait.follow(ev, hint) }}
		bopts := config.BuildOptions{Logger: env.logger, OnEvent: events.add}
		kind := env.cfg.SummarizerKind()
		if kind != config.SummarizerLLM {
			bopts.Summarizer = c.digestNoted(env, summarizer.NewDigest(summarizer.DigestOptions{}), "")
		}
		// One request: its summary is written now, not ahead of a
		// request that never comes.
		oneShot := *env.cfg
		oneShot.Ahead = -1
		comp, err := oneShot.Build(bopts)
		if err != nil {
			return fmt.Errorf("process: %w", err)
		}
		defer comp.Window.Close(context.Background())
		// The chain in its two steps, the trimmer then the window, so
		// the trimmer's own work is counted, the returns the window then
		// summarizes included.
		trim := trimtools.New(env.cfg.TrimOptions())

		repaired, fixes := processor.RepairHistory(history)
		for _, f := range fixes {
			c.note("repaired " + f.String())
		}
		head, rest := processor.SplitAtLastRequest(repaired)
		if len(head) == 0 {
			return fmt.Errorf("process: %s has no request to process", path)
		}
		if len(rest) > 0 {
			c.note(fmt.Sprintf("history ends with a response: processing messages 1-%d and keeping the last %d as they are", len(head), len(rest)))
		}
		afterTrim, err := trim.Process(ctx, head)
		if err != nil {
			return fmt.Errorf("process %s: %w", path, err)
		}
		out, err := comp.Window.Process(ctx, afterTrim)
		if err != nil {
			return fmt.Errorf("process %s: %w", path, err)
		}
		out = append(out[:len(out):len(out)], rest...)
		if err := transcript.Save(c.stdout, out); err != nil {
			return fmt.Errorf("process: write history: %w", err)
		}
		trimmed, removed := trimmedReturns(head, afterTrim)
		fmt.Fprintf(c.stderr, "messages: %d → %d\n", len(history), len(out))
		fmt.Fprintf(c.stderr, "tokens: %s → %s (estimated from the messages alone, as compact counts them)\n",
			tokens(processor.ContentTokens(history)), tokens(processor.ContentTokens(out)))
		fmt.Fprintf(c.stderr, "tool returns trimmed: %d (%s characters removed)\n", trimmed, count(removed))
		fmt.Fprintf(c.stderr, "compaction: %s\n", events.describe(kind))
		return nil
	}
}

// oneFile checks that args is exactly one file.
func oneFile(cmd string, args []string) (string, error) {
	switch len(args) {
	case 0:
		return "", usagef("%s: missing FILE (see abridge %s --help)", cmd, cmd)
	case 1:
		return args[0], nil
	}
	return "", usagef("%s: want one FILE, got %d arguments: %s", cmd, len(args), strings.Join(args, " "))
}

// historyCommand does what every command taking one history FILE does
// first: it checks args, loads the history and sets up the configured
// components. The caller closes env.
func (c *cli) historyCommand(cmd string, args []string) (path string, history []processor.Message, env *runEnv, err error) {
	if path, err = oneFile(cmd, args); err != nil {
		return "", nil, nil, err
	}
	if history, err = c.loadHistory(path); err != nil {
		return "", nil, nil, err
	}
	if env, err = c.setup(); err != nil {
		return "", nil, nil, err
	}
	return path, history, env, nil
}

// loadHistory reads an OpenAI-format history from path, or from stdin when
// path is "-". Its errors name the file once: "load FILE: …".
func (c *cli) loadHistory(path string) ([]processor.Message, error) {
	r := c.stdin
	if path == "-" {
		path = "stdin"
	} else {
		f, err := os.Open(path)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is named below
			}
			return nil, fmt.Errorf("load %s: %w", path, err)
		}
		defer f.Close()
		r = f
	}
	history, err := transcript.Load(r)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if len(history) == 0 {
		return nil, fmt.Errorf("load %s: no messages", path)
	}
	return history, nil
}

// trimmedReturns counts the tool returns of in whose content is shorter in
// out, and the characters removed from them.
func trimmedReturns(in, out []processor.Message) (n, removed int) {
	before := map[string]int{}
	for _, m := range in {
		for _, p := range m.Parts {
			if r, ok := p.(processor.ToolReturn); ok {
				before[r.ToolCallID] = processor.PartChars(r)
			}
		}
	}
	for _, m := range out {
		for _, p := range m.Parts {
			r, ok := p.(processor.ToolReturn)
			if !ok {
				continue
			}
			if b, ok := before[r.ToolCallID]; ok && processor.PartChars(r) < b {
				n++
				removed += b - processor.PartChars(r)
			}
		}
	}
	return n, removed
}

// windowEvents collects the window's events, and passes each to on (when
// set) as it comes.
type windowEvents struct {
	on     func(window.Event)
	mu     sync.Mutex
	events []window.Event
}

func (e *windowEvents) add(_ context.Context, ev window.Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
	if e.on != nil {
		e.on(ev)
	}
}

// describe says whether the window compacted, and how.
func (e *windowEvents) describe(summarizer string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.events {
		switch ev.Type {
		case window.EventFinished:
			how := "summary by the model"
			if summarizer != "llm" {
				how = "offline digest"
			}
			if ev.Fallback {
				how = "fallback digest"
			}
			return fmt.Sprintf("yes, %d messages summarized (%s), %d → %d messages, %s → %s tokens after trimming, %s-character summary",
				ev.Summarized, how, ev.MessagesBefore, ev.MessagesAfter, tokens(ev.TokensBefore), tokens(ev.TokensAfter), count(ev.SummaryChars))
		case window.EventFailed:
			return fmt.Sprintf("failed (%v); %d → %d messages with a fallback marker", ev.Err, ev.MessagesBefore, ev.MessagesAfter)
		}
	}
	return "no (the history is within the window)"
}

// tokens formats a token count briefly: 950, 21k, 1.2M.
func tokens(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	case n < 1_000_000:
		return fmt.Sprintf("%dk", (n+500)/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// count formats n with thousands separators.
func count(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + count(-n)
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
