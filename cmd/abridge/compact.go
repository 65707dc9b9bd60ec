package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/transcript"
)

var compactCommand = &command{
	name:    "compact",
	summary: "summarize a whole history into a summary and an acknowledgement",
	usage:   "abridge compact [--focus TEXT] FILE",
	about: `Compact summarizes the whole history in FILE, as a chat app's /compact
does, and prints the compacted history (the history's leading system
prompts, kept as they are, then a summary request and an acknowledging
response) as OpenAI JSON on stdout. What it replaced goes
to stderr: messages and estimated tokens before and after, and the
summary's size. FILE "-" is read from stdin.

The summary is written by the primary model (ABRIDGE_MODEL at
OPENAI_BASE_URL), or by the summarizer's model when only
ABRIDGE_SUMMARY_BASE_URL is set. --focus tells the model what the summary
should keep in particular. The offline digest, used when no model endpoint
is configured, ignores it.`,
	env:   []config.Group{config.GroupModel, config.GroupLog},
	flags: compactFlags,
}

func compactFlags(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error {
	focus := fs.String("focus", "", "what the summary should concentrate on: `TEXT` in the user's words")
	return func(ctx context.Context, c *cli, args []string) error {
		// While the summary is written, a line on stderr, when it is a
		// terminal, shows for how long; what else goes there erases it.
		wait := c.waitLine(c.stderr)
		defer wait.stop()
		path, history, env, err := c.historyCommand("compact", args)
		if err != nil {
			return err
		}
		defer env.close()
		comp, err := env.cfg.Build(config.BuildOptions{Logger: env.logger})
		if err != nil {
			return fmt.Errorf("compact: %w", err)
		}
		s := focusSummarizer(env, c, comp, *focus)
		if env.cfg.SummarizerKind() == config.SummarizerLLM {
			wait.start("summarizing "+plural(chatMessages(history), "message"),
				fmt.Sprintf("gives up after %s", env.cfg.SummaryTimeout))
		}
		out, rep, err := compact.Compact(ctx, s, history, *focus)
		wait.stop()
		if err != nil {
			return fmt.Errorf("compact %s: %w", path, err)
		}
		if err := transcript.Save(c.stdout, out); err != nil {
			return fmt.Errorf("compact: write history: %w", err)
		}
		fmt.Fprintln(c.stderr, describeCompaction(rep, history, out))
		return nil
	}
}

// describeCompaction says what a compaction of before into after
// replaced, counting messages as chat messages (see chatMessages).
func describeCompaction(r compact.Report, before, after []processor.Message) string {
	return fmt.Sprintf("compacted %d → %d messages (%s → %s tokens), %s-byte summary",
		chatMessages(before), chatMessages(after), tokens(r.TokensBefore), tokens(r.TokensAfter), count(r.SummaryBytes))
}

// focusSummarizer returns the summarizer compact uses
// (config.Components.CompactSummarizer), saying when it is the offline
// digest, which records the focus without following it.
func focusSummarizer(env *runEnv, c *cli, comp *config.Components, focus string) summarizer.Summarizer {
	s := comp.CompactSummarizer
	if comp.SummarizerKind == config.SummarizerDigest {
		extra := ""
		if focus != "" {
			extra = ", which cannot follow the focus (it is noted in the summary)"
		}
		return c.digestNoted(env, s, extra)
	}
	return s
}
