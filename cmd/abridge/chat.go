package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/summarizer"
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

On a terminal a line shows how long the chat has been waiting for the
model; a request that takes longer than ABRIDGE_REQUEST_TIMEOUT, or a
stream that stays silent longer than ABRIDGE_STREAM_IDLE_TIMEOUT, fails.
An interrupt (Ctrl-C) while the model answers or a /compact runs stops it
and returns to the prompt, the conversation left as it was before; at the
prompt, or while the session is being opened, it leaves.

With --session NAME the conversation is resumed from the session store
(ABRIDGE_SESSION_DB; a SQLite file by default) and every message is saved.
A turn that fails or is interrupted is recorded as withdrawn, and its
prompt is not sent again. When another chat writes to the same session,
this one reloads it before its next turn.`,
	env:            []config.Group{config.GroupModel, config.GroupProcessors, config.GroupAgent, config.GroupSession, config.GroupLog},
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
		// The waiting line is drawn on stdout when it is a terminal;
		// whatever goes to stderr, log lines included, erases it first.
		wait := c.waitLine(c.stdout)
		env, err := c.setup()
		if err != nil {
			return err
		}
		defer env.close()
		if !c.primaryEndpoint() {
			return errors.New("chat: no model endpoint configured: set OPENAI_API_KEY or OPENAI_BASE_URL")
		}
		ch := &chat{cli: c, wait: wait, timeout: env.cfg.RequestTimeout}
		// The chat tells of the window's events itself (windowEvent):
		// they are not logged as well.
		bopts := config.BuildOptions{Logger: env.logger, OnEvent: ch.windowEvent, QuietEvents: true}
		var opts []agent.Option
		if *name != "" {
			var (
				store *session.Store
				sess  *session.Session
				fixes []processor.Fix
			)
			// The database can keep the chat waiting (a server that does
			// not answer, another process holding the write lock): an
			// interrupt ends the chat then.
			_, err := ch.interruptible(ctx, func(ctx context.Context) error {
				var err error
				if store, err = openStore(ctx, env.cfg.SessionDB, env.logger, true); err != nil {
					return fmt.Errorf("chat: %w", err)
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
			ch.sess = sess
			// The session keeps the window's summaries (a restart reuses
			// them) and gives back what compaction took out (recall).
			bopts.Store, bopts.Recall = store.Summaries(), true
			opts = append(opts, agent.WithStore(sess), agent.WithRecall(sess))
			if len(ch.history) > 0 {
				c.status(fmt.Sprintf("resumed session %q: %s (~%s tokens)", *name, plural(chatMessages(ch.history), "message"), tokens(processor.EstimateTokens(ch.history))))
			} else {
				c.status(fmt.Sprintf("new session %q", *name))
			}
		}
		comp, err := env.cfg.Build(bopts)
		if err != nil {
			return fmt.Errorf("chat: %w", err)
		}
		// The chain (trimmer, window) before every request, the window
		// as the compactor forced on a context overflow, the step limit
		// and the logger, as configured.
		opts = append(append(comp.AgentOptions,
			agent.WithSystemPrompt(systemPrompt),
			agent.WithEvents(ch.agentEvent),
			agent.WithOnText(ch.text),
		), opts...)
		ch.agent = agent.New(comp.Model, opts...)
		ch.compact = focusSummarizer(env, c, comp, "")
		defer func() {
			// The chat is over: the summaries still being written ahead
			// are abandoned whole, not paid for to no use.
			done, cancel := context.WithCancel(context.Background())
			cancel()
			_ = comp.Window.Close(done)
		}()
		return ch.loop(ctx)
	}
}

// chat is one interactive conversation.
type chat struct {
	*cli
	agent   *agent.Agent
	compact summarizer.Summarizer
	sess    *session.Session // nil without --session
	history []processor.Message
	usage   processor.Usage
	steps   int
	turns   int
	// streamed is set once text of the current turn was printed;
	// midLine while the last text printed did not end its line.
	streamed, midLine bool
	// wait shows, on a terminal, that the chat waits for the model.
	wait    *indicator
	timeout time.Duration // ABRIDGE_REQUEST_TIMEOUT
}

// loop reads lines until /quit, the end of input, an interrupt while it
// waits for input, or the end of ctx. An interrupt during a turn or a
// /compact cancels only that.
func (ch *chat) loop(ctx context.Context) error {
	// Lines are read on their own goroutine so that an interrupt, or the
	// end of ctx, ends the chat while it waits for input.
	lines := make(chan inputLine)
	done := make(chan struct{})
	defer close(done)
	var readErr error
	go func() {
		defer close(lines)
		r := bufio.NewReader(ch.stdin)
		for n := 1; ; n++ {
			text, tooLong, err := readLine(r, maxInputLine)
			if err != nil && (err != io.EOF || text == "" && !tooLong) {
				if err != io.EOF {
					readErr = err
				}
				return
			}
			select {
			case lines <- inputLine{text: text, n: n, tooLong: tooLong}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	interactive := isTerminal(ch.stdout) && isTerminal(ch.stdin)
	if interactive {
		ch.status("type a message, or /help")
	}
	// A chat whose input is not a terminal, a script's, fails when any of
	// its turns failed (an interrupted one did not), so that the script
	// can tell.
	turns, failed := 0, 0
	end := func() error {
		if interactive || failed == 0 {
			return nil
		}
		return fmt.Errorf("chat: %d of %s failed", failed, plural(turns, "turn"))
	}
	for {
		if interactive {
			fmt.Fprint(ch.stdout, "> ")
		}
		var in inputLine
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
		case in, ok = <-lines:
		}
		if !ok {
			if interactive {
				fmt.Fprintln(ch.stdout)
			}
			if readErr != nil {
				return fmt.Errorf("chat: read input: %w", readErr)
			}
			return end()
		}
		if in.tooLong {
			fmt.Fprintf(ch.stderr, "abridge: input line %d is longer than %d MiB: not sent; the chat goes on with the next line\n", in.n, maxInputLine>>20)
			continue
		}
		line := strings.TrimSpace(in.text)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "/") {
			quit, err := ch.command(ctx, line)
			if err != nil {
				fmt.Fprintf(ch.stderr, "abridge: %v\n", err)
			}
			if quit {
				return end()
			}
			continue
		}
		turns++
		if err := ch.turn(ctx, line); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, errTurnInterrupted) {
				failed++
			}
			fmt.Fprintf(ch.stderr, "abridge: %s\n", strings.Join(strings.Fields(err.Error()), " "))
		}
	}
}

// maxInputLine is the longest input line the chat sends: 16 MiB, some
// four million tokens, more than any model takes.
const maxInputLine = 16 << 20

// inputLine is one line of the chat's input: its text and number, or
// tooLong when it was longer than maxInputLine (its text then dropped).
type inputLine struct {
	text    string
	n       int
	tooLong bool
}

// readLine reads one line of r without its line ending ("\n" or "\r\n").
// A line longer than max bytes is read to its end and dropped, reported by
// tooLong. At the end of the input, a last line without a line ending is
// returned with io.EOF.
func readLine(r *bufio.Reader, max int) (text string, tooLong bool, err error) {
	var b []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(b)+len(chunk) > max+2 { // room for the line ending
				tooLong, b = true, nil
			} else {
				b = append(b, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if !tooLong && len(line) > max {
			tooLong, line = true, ""
		}
		return line, tooLong, err
	}
}

// errTurnInterrupted is what a turn an interrupt cancelled returns.
var errTurnInterrupted = errors.New("turn interrupted")

// turn sends one prompt and prints the answer. An interrupt while it runs
// cancels it, and it returns errTurnInterrupted. A turn that fails,
// interrupted or not, leaves the conversation as it was before it: see
// takeBack. With a session that another chat wrote to since this one last
// read it, the session is reloaded first.
func (ch *chat) turn(ctx context.Context, prompt string) error {
	if err := ch.sync(ctx); err != nil {
		return err
	}
	ch.streamed, ch.midLine = false, false
	if ch.sess != nil {
		ch.sess.BeginTurn()
	}
	var res *agent.Result
	interrupted, err := ch.interruptible(ctx, func(ctx context.Context) error {
		var err error
		res, err = ch.agent.Run(ctx, ch.history, prompt)
		return err
	})
	ch.wait.stop()
	if ch.midLine {
		fmt.Fprintln(ch.stdout)
		ch.midLine = false
	}
	if err != nil {
		if interrupted {
			err = errTurnInterrupted
		}
		return ch.takeBack(ctx, err)
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

// takeBack puts the session back in step with the chat after a turn that
// failed with turnErr, and returns the error to show. The chat goes on
// from the history before the turn, which it still holds, rather than from
// the partial one the agent returns: a user who interrupts a turn takes the
// prompt back, and a prompt the provider refused would otherwise be sent
// again with the next one. The agent, though, appended the turn's prompt
// (and maybe more) to the session as it went, and a write cut short by the
// cancellation can leave it ending with a tool call never answered: the
// turn is withdrawn from the session (its messages stay in the transcript,
// marked as a withdrawn turn). When another chat wrote to the session
// meanwhile, only this turn's messages are taken out, and the chat reloads
// the session. Without a session, or once ctx is done (the chat is
// ending), takeBack does nothing.
func (ch *chat) takeBack(ctx context.Context, turnErr error) error {
	if ch.sess == nil || ctx.Err() != nil {
		return turnErr
	}
	reason := "interrupted"
	if !errors.Is(turnErr, errTurnInterrupted) {
		reason = "failed: " + oneLine(turnErr.Error())
	}
	if err := ch.sess.Withdraw(ctx, ch.history, reason); err != nil {
		return fmt.Errorf("%w; the turn could not be taken out of session %q, so its prompt may be sent again when it is resumed: %w", turnErr, ch.sess.Name(), err)
	}
	current, err := ch.sess.Current(ctx)
	if err != nil {
		return fmt.Errorf("%w; session %q: %w", turnErr, ch.sess.Name(), err)
	}
	if current {
		return turnErr
	}
	if err := ch.reload(ctx); err != nil {
		return fmt.Errorf("%w; %w", turnErr, err)
	}
	if errors.Is(turnErr, session.ErrConflict) {
		return fmt.Errorf("session %q was changed by another chat during this turn, so your message was not answered: send it again", ch.sess.Name())
	}
	return turnErr
}

// sync reloads the session when another chat wrote to it since this one
// last read or wrote it.
func (ch *chat) sync(ctx context.Context) error {
	if ch.sess == nil {
		return nil
	}
	current, err := ch.sess.Current(ctx)
	if err != nil {
		return fmt.Errorf("session %q: %w", ch.sess.Name(), err)
	}
	if current {
		return nil
	}
	return ch.reload(ctx)
}

// reload makes the session's working history the chat's, and says so.
func (ch *chat) reload(ctx context.Context) error {
	h, fixes, err := ch.sess.Resume(ctx)
	if err != nil {
		return fmt.Errorf("reload session %q: %w", ch.sess.Name(), err)
	}
	ch.history = h
	msg := fmt.Sprintf("session %q was changed by another chat: reloaded it (%s)", ch.sess.Name(), plural(chatMessages(h), "message"))
	if len(fixes) > 0 {
		msg += ": " + describeFixes(fixes)
	}
	ch.status(msg)
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
		fmt.Fprintf(ch.stdout, "history: %s, ~%s tokens\n", plural(chatMessages(ch.history), "message"), count(processor.EstimateTokens(ch.history)))
	case "/compact":
		if err := ch.sync(ctx); err != nil {
			return false, fmt.Errorf("/compact: %w", err)
		}
		interrupted, err := ch.interruptible(ctx, func(ctx context.Context) error {
			return ch.compactNow(ctx, arg)
		})
		ch.wait.stop()
		switch {
		case interrupted && err != nil:
			err = errors.New("/compact interrupted")
		case errors.Is(err, session.ErrConflict):
			if rerr := ch.reload(ctx); rerr != nil {
				return false, fmt.Errorf("/compact: %w", rerr)
			}
			err = fmt.Errorf("/compact: session %q was changed by another chat meanwhile, so nothing was compacted: run /compact again", ch.sess.Name())
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
	ch.status("… summarizing " + plural(chatMessages(ch.history), "message"))
	ch.wait.start("summarizing "+plural(chatMessages(ch.history), "message"), "Ctrl-C stops it")
	out, rep, err := compact.Compact(ctx, ch.compact, ch.history, focus)
	ch.wait.stop()
	if err != nil {
		return fmt.Errorf("/compact: %w", err)
	}
	if ch.sess != nil {
		if err := ch.sess.Replace(ctx, out); err != nil {
			return fmt.Errorf("/compact: save: %w", err)
		}
	}
	before := ch.history
	ch.history = out
	ch.status(describeCompaction(rep, before, out))
	return nil
}

func (ch *chat) text(delta string) {
	ch.wait.stop()
	ch.streamed = true
	ch.midLine = !strings.HasSuffix(delta, "\n")
	io.WriteString(ch.stdout, delta)
}

// waitForModel shows, on a terminal, that the chat waits for the model.
func (ch *chat) waitForModel() {
	if ch.midLine {
		// The line holds text of this turn: the indicator goes below.
		fmt.Fprintln(ch.stdout)
		ch.midLine = false
	}
	hint := "Ctrl-C stops it"
	if ch.timeout > 0 {
		hint = "gives up after " + ch.timeout.String() + "; " + hint
	}
	ch.wait.start("waiting for the model", hint)
}

// windowEvent shows what the window is doing.
func (ch *chat) windowEvent(_ context.Context, ev window.Event) {
	switch ev.Type {
	case window.EventAheadStarted, window.EventAheadFinished, window.EventAheadWasted:
		// Summaries written in the background, while the user types:
		// the compaction that uses one is told.
		return
	}
	ch.status(describeWindowEvent(ev))
	ch.wait.follow(ev, "Ctrl-C stops it")
}

func describeWindowEvent(ev window.Event) string {
	switch ev.Type {
	case window.EventStarted:
		return "… " + summarizing(ev)
	case window.EventFinished:
		s := fmt.Sprintf("compacted %d → %d messages (%s → %s tokens)",
			ev.MessagesBefore, ev.MessagesAfter, tokens(ev.TokensBefore), tokens(ev.TokensAfter))
		if ev.Fallback {
			s += " with the fallback digest"
		}
		if ev.Prepared && ev.Waited == 0 {
			s += ", its summary written ahead"
		}
		return s
	case window.EventDeferred:
		return fmt.Sprintf("compaction due at %d messages; its summary is still being written, so this request goes uncompacted", ev.MessagesBefore)
	case window.EventFailed:
		if ev.Reason == "canceled" {
			return "summarizing interrupted: nothing compacted"
		}
		if errors.Is(ev.Err, window.ErrNoSmallerSummary) && ev.MessagesAfter >= ev.MessagesBefore {
			return "not compacted: no summary would be smaller than the messages it would replace"
		}
		return fmt.Sprintf("summary failed (%v): %d → %d messages with a fallback digest", ev.Err, ev.MessagesBefore, ev.MessagesAfter)
	case window.EventCleared:
		return fmt.Sprintf("cleared old tool outputs: %s → %s tokens", tokens(ev.TokensBefore), tokens(ev.TokensAfter))
	case window.EventStoreFailed:
		return fmt.Sprintf("summary store failed (%s): %v", ev.Reason, ev.Err)
	}
	return fmt.Sprintf("window: %v", ev.Type)
}

// agentEvent shows the agent's steps a user would want to see.
func (ch *chat) agentEvent(_ context.Context, ev agent.Event) {
	switch ev.Kind {
	case agent.EventRequest:
		ch.waitForModel()
	case agent.EventResponse:
		ch.wait.stop()
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

// writeHistory prints a history one line per part, numbered as the chat
// messages the model is sent: each part of a request (system prompt, user
// prompt, tool result) is one, a response with all its parts one.
func writeHistory(w io.Writer, history []processor.Message) {
	if len(history) == 0 {
		fmt.Fprintln(w, "(no messages yet)")
		return
	}
	n := 0
	for _, m := range history {
		one := chatCount(m) == 1
		for i, line := range describeMessage(m) {
			if i == 0 || !one {
				n++
			}
			fmt.Fprintf(w, "%3d  %s\n", n, line)
		}
	}
}

// chatMessages counts history's messages as [writeHistory] numbers them.
func chatMessages(history []processor.Message) int {
	n := 0
	for _, m := range history {
		n += chatCount(m)
	}
	return n
}

// chatCount is how many chat messages m is: one for a response or a
// summary marker, one for each part of any other request.
func chatCount(m processor.Message) int {
	if _, _, ok := summary.ParseMarker(m); ok || m.Kind == processor.Response {
		return 1
	}
	return max(len(m.Parts), 1)
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
func clip(s string) string { return processor.Preview(s, clipWidth) }

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
