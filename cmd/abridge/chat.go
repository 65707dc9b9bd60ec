package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/summary"
)

var chatCommand = &command{
	name:    "chat",
	summary: "talk to the model in an agent that stays inside its context window",
	usage:   "abridge chat [--session NAME]",
	about: `Chat is an interactive agent: type a message and press Enter. The
history goes through abridge's processors before every request, and what
they do (a summary being written, a compaction) shows as status lines on
stderr. It needs a model endpoint (OPENAI_API_KEY or OPENAI_BASE_URL).

Commands:

  /compact [FOCUS]  summarize the conversation now, keeping FOCUS in particular
  /history          print the working history
  /usage            print the tokens used so far and the history's size
  /help             print these commands
  /quit             leave (so does end of input)

An interrupt (Ctrl-C) while the model answers or a /compact runs stops it
and returns to the prompt, the conversation left as it was before; at the
prompt, or while the session is being opened, it leaves.

With --session NAME the conversation is resumed from the session store
(ABRIDGE_SESSION_DB; a SQLite file by default) and every message is saved.`,
	env:            vars(envModel, envWindow, []string{envAgent, envSession}, envLog),
	flags:          chatFlags,
	ownsInterrupts: true,
}

// systemPrompt starts every new conversation.
const systemPrompt = "You are a helpful assistant talking to the user in a terminal. Answer concisely, in plain text."

const chatCommands = `/compact [FOCUS]  summarize the conversation now
/history          print the working history
/usage            print the tokens used so far
/help             print these commands
/quit             leave`

func chatFlags(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error {
	name := fs.String("session", "", "resume and save the conversation as session `NAME`")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) > 0 {
			return usagef("chat: unexpected arguments: %s", strings.Join(args, " "))
		}
		env, err := c.setup()
		if err != nil {
			return err
		}
		defer env.close()
		if !c.primaryEndpoint() {
			return errors.New("chat: no model endpoint configured: set OPENAI_API_KEY or OPENAI_BASE_URL")
		}
		ch := &chat{cli: c}
		m := env.cfg.NewModel(env.logger)
		s, _ := env.cfg.NewSummarizer(env.logger)
		w := env.cfg.NewWindow(s, env.logger, ch.windowEvent)
		// The chain (trimmer, window) before every request, the window
		// as the compactor forced on a context overflow, the step limit
		// and the logger, as configured.
		opts := append(env.cfg.AgentOptions(w, env.logger),
			agent.WithSystemPrompt(systemPrompt),
			agent.WithEvents(ch.agentEvent),
			agent.WithOnText(ch.text),
		)
		if *name != "" {
			var (
				store session.Store
				sess  *session.Session
				fixes []processor.Fix
			)
			// The database can keep the chat waiting (a server that does
			// not answer, another process holding the write lock): an
			// interrupt ends the chat then.
			_, err := ch.interruptible(ctx, func(ctx context.Context) error {
				var err error
				if store, err = session.Open(ctx, env.cfg.SessionDB, env.logger); err != nil {
					return fmt.Errorf("chat: %s: %w", envSession, err) // "open session store: …"
				}
				if sess, err = store.Session(ctx, *name); err != nil {
					return fmt.Errorf("chat: session %q: %w", *name, err)
				}
				// A session a killed chat left in the middle of a turn
				// has calls nobody answered: answer them as interrupted.
				if ch.history, fixes, err = sess.Resume(ctx); err != nil {
					return fmt.Errorf("chat: session %q: %w", *name, err)
				}
				return nil
			})
			if store != nil {
				defer store.Close()
			}
			if err != nil {
				return err
			}
			if len(fixes) > 0 {
				c.status(fmt.Sprintf("session %q was left in the middle of a turn: %s", *name, describeFixes(fixes)))
			}
			ch.store = sess
			opts = append(opts, agent.WithStore(sess))
			if len(ch.history) > 0 {
				c.status(fmt.Sprintf("resumed session %q: %d messages (~%s tokens)", *name, len(ch.history), tokens(processor.EstimateTokens(ch.history))))
			} else {
				c.status(fmt.Sprintf("new session %q", *name))
			}
		}
		ch.agent = agent.New(m, opts...)
		ch.compact = focusSummarizer(env, c, "")
		return ch.loop(ctx)
	}
}

// chat is one interactive conversation.
type chat struct {
	*cli
	agent   *agent.Agent
	compact compact.Summarizer
	store   agent.Store
	history []processor.Message
	usage   processor.Usage
	steps   int
	turns   int
	// streamed is set once text of the current turn was printed.
	streamed bool
}

// loop reads lines until /quit, the end of input, an interrupt while it
// waits for input, or the end of ctx. An interrupt during a turn or a
// /compact cancels only that.
func (ch *chat) loop(ctx context.Context) error {
	// Lines are read on their own goroutine so that an interrupt, or the
	// end of ctx, ends the chat while it waits for input.
	lines := make(chan string)
	done := make(chan struct{})
	defer close(done)
	var readErr error
	go func() {
		defer close(lines)
		in := bufio.NewScanner(ch.stdin)
		in.Buffer(make([]byte, 64*1024), 16<<20)
		for in.Scan() {
			select {
			case lines <- in.Text():
			case <-done:
				return
			}
		}
		readErr = in.Err()
	}()
	interactive := isTerminal(ch.stdout) && isTerminal(ch.stdin)
	if interactive {
		ch.status("type a message, or /help")
	}
	for {
		if interactive {
			fmt.Fprint(ch.stdout, "> ")
		}
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			if interactive {
				fmt.Fprintln(ch.stdout)
			}
			return nil
		case <-ch.interrupts:
			if interactive {
				fmt.Fprintln(ch.stdout)
			}
			return nil
		case line, ok = <-lines:
		}
		if !ok {
			if interactive {
				fmt.Fprintln(ch.stdout)
			}
			if readErr != nil {
				return fmt.Errorf("chat: read input: %w", readErr)
			}
			return nil
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "/") {
			quit, err := ch.command(ctx, line)
			if err != nil {
				fmt.Fprintf(ch.stderr, "abridge: %v\n", err)
			}
			if quit {
				return nil
			}
			continue
		}
		if err := ch.turn(ctx, line); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintf(ch.stderr, "abridge: %s\n", strings.Join(strings.Fields(err.Error()), " "))
		}
	}
}

// errTurnInterrupted is what a turn an interrupt cancelled returns.
var errTurnInterrupted = errors.New("turn interrupted")

// turn sends one prompt and prints the answer. An interrupt while it runs
// cancels it, and it returns errTurnInterrupted. A turn that fails,
// interrupted or not, leaves the conversation as it was before it: see
// forget.
func (ch *chat) turn(ctx context.Context, prompt string) error {
	ch.streamed = false
	var res *agent.Result
	interrupted, err := ch.interruptible(ctx, func(ctx context.Context) error {
		var err error
		res, err = ch.agent.Run(ctx, ch.history, prompt)
		return err
	})
	if ch.streamed {
		fmt.Fprintln(ch.stdout)
	}
	if err != nil {
		if interrupted {
			err = errTurnInterrupted
		}
		if ferr := ch.forget(ctx); ferr != nil {
			err = fmt.Errorf("%w; %w", err, ferr)
		}
		return err
	}
	// A turn that succeeded is kept, even when an interrupt came as it
	// ended.
	ch.history = res.History
	ch.usage = ch.usage.Add(res.Usage)
	ch.steps += res.Steps
	ch.turns++
	if !ch.streamed {
		fmt.Fprintln(ch.stdout, res.Text)
	}
	return nil
}

// forget puts the session store back in step with the chat after a failed
// turn. The chat goes on from the history before the turn, which it still
// holds, rather than from the partial one the agent returns: a user who
// interrupts a turn takes the prompt back, and a prompt the provider
// refused would otherwise be sent again with the next one. The agent,
// though, appended the turn's prompt (and maybe more) to the store as it
// went, and a store write cut short by the cancellation can leave it
// ending with a tool call never answered. Replacing the stored working
// history with the chat's drops all of that from it; the messages stay in
// the transcript, marked as taken out by a compaction. Without a store, or
// once ctx is done (the chat is ending), forget does nothing.
func (ch *chat) forget(ctx context.Context) error {
	if ch.store == nil || ctx.Err() != nil {
		return nil
	}
	if err := ch.store.Replace(ctx, ch.history); err != nil {
		return fmt.Errorf("session: reset to before the turn: %w", err)
	}
	return nil
}

// interruptible runs f with a context that an interrupt cancels, and
// reports whether one did. It returns when f does.
func (ch *chat) interruptible(ctx context.Context, f func(ctx context.Context) error) (interrupted bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	watched := make(chan bool)
	go func() {
		select {
		case <-ch.interrupts:
			cancel()
			watched <- true
		case <-stop:
			watched <- false
		}
	}()
	err = f(ctx)
	close(stop)
	return <-watched, err
}

// command runs a slash command and reports whether to quit.
func (ch *chat) command(ctx context.Context, line string) (quit bool, err error) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/quit", "/exit", "/q":
		return true, nil
	case "/help":
		fmt.Fprintln(ch.stdout, chatCommands)
	case "/history":
		writeHistory(ch.stdout, ch.history)
	case "/usage":
		fmt.Fprintf(ch.stdout, "turns: %d, requests: %d\n", ch.turns, ch.steps)
		fmt.Fprintf(ch.stdout, "tokens: %s input (%s cached), %s output\n",
			count(int(ch.usage.InputTokens)), count(int(ch.usage.CachedInputTokens)), count(int(ch.usage.OutputTokens)))
		fmt.Fprintf(ch.stdout, "history: %d messages, ~%s tokens\n", len(ch.history), count(processor.EstimateTokens(ch.history)))
	case "/compact":
		interrupted, err := ch.interruptible(ctx, func(ctx context.Context) error {
			return ch.compactNow(ctx, arg)
		})
		if interrupted && err != nil {
			err = errors.New("/compact interrupted")
		}
		return false, err
	default:
		return false, fmt.Errorf("unknown command %s (try /help)", name)
	}
	return false, nil
}

// compactNow summarizes the whole conversation on the user's request.
func (ch *chat) compactNow(ctx context.Context, focus string) error {
	if len(ch.history) == 0 {
		return errors.New("/compact: nothing to compact yet")
	}
	ch.status(fmt.Sprintf("… summarizing %d messages", len(ch.history)))
	out, rep, err := compact.Compact(ctx, ch.compact, ch.history, focus)
	if err != nil {
		return fmt.Errorf("/compact: %w", err)
	}
	if ch.store != nil {
		if err := ch.store.Replace(ctx, out); err != nil {
			return fmt.Errorf("/compact: save: %w", err)
		}
	}
	ch.history = out
	ch.status(describeCompaction(rep))
	return nil
}

func (ch *chat) text(delta string) {
	ch.streamed = true
	io.WriteString(ch.stdout, delta)
}

// windowEvent shows what the window is doing.
func (ch *chat) windowEvent(_ context.Context, ev window.Event) {
	ch.status(describeWindowEvent(ev))
}

func describeWindowEvent(ev window.Event) string {
	switch ev.Type {
	case window.EventStarted:
		n := ev.Summarized
		if n == 0 {
			n = ev.MessagesBefore
		}
		return fmt.Sprintf("… summarizing %d messages", n)
	case window.EventFinished:
		s := fmt.Sprintf("compacted %d → %d messages (%s → %s tokens)",
			ev.MessagesBefore, ev.MessagesAfter, tokens(ev.TokensBefore), tokens(ev.TokensAfter))
		if ev.Fallback {
			s += " with the fallback digest"
		}
		return s
	case window.EventFailed:
		if ev.Reason == "canceled" {
			return "summarizing interrupted: nothing compacted"
		}
		if errors.Is(ev.Err, window.ErrNoSmallerSummary) && ev.MessagesAfter >= ev.MessagesBefore {
			return "not compacted: no summary would be smaller than the messages it would replace"
		}
		return fmt.Sprintf("summary failed (%v): %d → %d messages with a fallback digest", ev.Err, ev.MessagesBefore, ev.MessagesAfter)
	}
	return fmt.Sprintf("window: %v", ev.Type)
}

// agentEvent shows the agent's steps a user would want to see.
func (ch *chat) agentEvent(_ context.Context, ev agent.Event) {
	switch ev.Kind {
	case agent.EventTool:
		if ev.Err != nil {
			ch.status(fmt.Sprintf("tool %s failed: %v", ev.ToolName, ev.Err))
		} else {
			ch.status("ran tool " + ev.ToolName)
		}
	case agent.EventCompactionForced:
		if ev.Err != nil {
			ch.status(fmt.Sprintf("the prompt was too long and compacting failed: %v", ev.Err))
			return
		}
		ch.status(fmt.Sprintf("the prompt was too long: compacted %d → %d messages (%s → %s tokens)",
			ev.MessagesBefore, ev.Messages, tokens(ev.TokensBefore), tokens(ev.Tokens)))
	}
}

// writeHistory prints a history one line per part.
func writeHistory(w io.Writer, history []processor.Message) {
	if len(history) == 0 {
		fmt.Fprintln(w, "(no messages yet)")
		return
	}
	for i, m := range history {
		for _, line := range describeMessage(m) {
			fmt.Fprintf(w, "%3d  %s\n", i+1, line)
		}
	}
}

// describeMessage returns one line per part of m.
func describeMessage(m processor.Message) []string {
	if s, _, ok := summary.ParseMarker(m); ok {
		return []string{"summary: " + clip(s)}
	}
	var lines []string
	for _, p := range m.Parts {
		lines = append(lines, processor.Describe(p, clipWidth))
	}
	if len(lines) == 0 {
		lines = append(lines, m.Kind.String()+": (empty)")
	}
	return lines
}

// clipWidth is how many characters of a message's text /history shows.
const clipWidth = 160

// clip shortens s to one line of at most clipWidth characters.
func clip(s string) string { return processor.Clip(s, clipWidth) }

// describeFixes says what a session's repair did, in a few words.
func describeFixes(fixes []processor.Fix) string {
	answered, dropped := 0, 0
	for _, f := range fixes {
		switch f.Action {
		case processor.ActionAnsweredCall:
			answered++
		case processor.ActionDroppedOrphan:
			dropped++
		}
	}
	var parts []string
	if answered > 0 {
		parts = append(parts, plural(answered, "tool call")+" answered as interrupted")
	}
	if dropped > 0 {
		parts = append(parts, plural(dropped, "stray tool result")+" dropped")
	}
	if len(parts) == 0 {
		return "repaired"
	}
	return strings.Join(parts, ", ")
}

// plural returns "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
