package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	abridge "github.com/abridge-go/abridge"
	"github.com/abridge-go/abridge/cmd/abridge/internal/replay"
	"github.com/abridge-go/abridge/config"
)

var replayCommand = &command{
	name:    "replay",
	summary: "replay transcripts as the agent would have sent them and report the savings",
	usage:   "abridge replay [--wide | --json] [--plot FILE] [--html FILE] [--mode processed|full|fresh] [FILE|DIR...]",
	about: `Replay replays each transcript request by request, running abridge's
processors before every request as an agent would, and reports what they
save. Its table fits 100 columns: a row per transcript and a total with the
requests, compactions, mean estimated prompt tokens without and with
abridge, prompt-cache reuse, input tokens billed a request, and the needed
tokens kept: of the paths, names, identifiers, long numbers and quoted
strings each reply went on to use from earlier messages, the share its
request still showed, all of them and those last seen more than 20 messages
back (where compaction acts). Under it, for all transcripts together: the
largest and mean estimated tokens, mean characters and their reduction,
summarizer calls and input over the transcripts' size, the naive baseline,
the prompt-cache reuse ceiling (what the compaction points allow), the share
of file paths in compacted messages the summaries still name, invalid
requests (requests the processors failed on or that would not have been
valid to send) and processor time. --wide shows every figure per
transcript; --json holds everything, per-request series included. Replay
prints its report and exits with 1 when any request is invalid, saying how
many and where.

With no FILE it replays the five real transcripts shipped in abridge (the
binary holds them; testdata/README.md in the source says
where they come from). A DIR stands for the .json files it holds. Without a model endpoint the window summarizes with
the offline digest; with OPENAI_API_KEY or OPENAI_BASE_URL set it calls the
model.

When the transcripts' names do not fit beside the figures, the table numbers
its rows and lists the names whole above it. --html writes the same figures,
each column explained, with a chart per transcript and the receipt of every
compaction (the summary marker as it was sent, the messages it replaced, who
wrote it), as one HTML file that opens offline.

Terms:

` + replayTerms(),
	env:   []config.Group{config.GroupModel, config.GroupProcessors, config.GroupLog},
	flags: replayFlags,
}

func replayFlags(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error {
	asJSON := fs.Bool("json", false, "print the report as JSON, every figure and the per-request series included")
	wide := fs.Bool("wide", false, "print every figure per transcript, in a table some 340 columns wide "+
		"(the default table fits 100 columns and gives the other figures for all transcripts together)")
	plot := fs.String("plot", "", "draw the estimated prompt tokens per request, with and without abridge, "+
		"one panel per transcript, to `FILE`: SVG for a .svg name, PNG for .png")
	htmlFile := fs.String("html", "", "write one self-contained HTML report to `FILE` (it opens offline in any browser): "+
		"every figure per transcript with each column explained, the terms, and per transcript its chart and each compaction's receipt, "+
		"the summary marker as sent included")
	turn := fs.Duration("turn", replay.DefaultTurn, "virtual time between two requests (the model's answer and the tools' run): "+
		"the summaries written ahead that are ready by the next request are used, the others make it wait or go out uncompacted")
	latency := fs.Duration("summary-latency", replay.DefaultSummaryLatency, "virtual time a summary takes to write "+
		"(the replay never waits: these only tell which requests would have)")
	mode := fs.String("mode", "processed", "how the host keeps its history: `processed|full|fresh` "+
		"(processed: the processed history replaces the stored one; full: the full history is kept and processed whole before every request; "+
		"fresh: the full history is decoded from a request's JSON before every request, as a proxy sees it, and the decoding is timed apart)")
	return func(ctx context.Context, c *cli, args []string) error {
		m, err := replay.ParseMode(*mode)
		if err != nil {
			return usagef("replay: --mode is %q; want processed, full or fresh", *mode)
		}
		if *turn <= 0 || *latency <= 0 {
			return usagef("replay: --turn %v, --summary-latency %v: want positive durations", *turn, *latency)
		}
		if *wide && *asJSON {
			return usagef("replay: --wide and --json: choose one (--json holds every figure)")
		}
		if *plot != "" {
			if _, err := replay.PlotFormat(*plot); err != nil {
				return usagef("replay: --plot %s: %v", *plot, replay.ErrPlotFormat)
			}
		}
		env, err := c.setup()
		if err != nil {
			return err
		}
		defer env.close()
		args, err = transcriptFiles(args)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		opts := replay.Options{
			Mode:     m,
			Window:   env.cfg.WindowOptions(),
			Trim:     env.cfg.TrimOptions(),
			Progress: newProgress(c.stderr).update,
			Strategy: env.cfg.Strategy,
			Receipts: *htmlFile != "",
			Turn:     *turn,

			SummaryLatency: *latency,
		}
		if env.cfg.SummarizerKind() == config.SummarizerLLM {
			comp, err := env.cfg.Build(config.BuildOptions{Logger: env.logger})
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			opts.Summarizer = replay.SummarizerModel
			opts.Model = comp.SummaryModel
		} else {
			opts.Summarizer = replay.SummarizerDigest
		}
		var report *replay.Report
		if len(args) > 0 {
			report, err = replay.Run(ctx, args, opts)
		} else {
			shippedFS, shippedNames := abridge.Transcripts()
			report, err = replay.RunFS(ctx, shippedFS, shippedNames, opts)
		}
		opts.Progress("", 0, 0)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		if report.Total.Requests == 0 {
			which := "the transcript has no assistant message"
			if n := len(report.Results); n > 1 {
				which = fmt.Sprintf("none of the %d transcripts has an assistant message", n)
			}
			return fmt.Errorf("replay: nothing replayed: %s, and a request is replayed before each one", which)
		}
		if opts.Summarizer == replay.SummarizerDigest && report.Total.SummarizerCalls > 0 {
			c.noteDigest(env, "")
		}
		for _, r := range report.Results {
			if r.Requests == 0 {
				c.note(fmt.Sprintf("%s: nothing replayed: no assistant message", r.File))
			}
		}
		switch {
		case *asJSON:
			err = report.WriteJSON(c.stdout)
		case *wide:
			err = report.WriteWideTable(c.stdout)
		default:
			err = report.WriteTable(c.stdout)
		}
		if err != nil {
			return fmt.Errorf("replay: write report: %w", err)
		}
		if *plot != "" {
			files, err := report.PlotAll(*plot)
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			c.note(plotNote(*plot, files, len(report.Results)))
		}
		if *htmlFile != "" {
			if err := writeHTML(*htmlFile, report); err != nil {
				return fmt.Errorf("replay: --html %s: %w", *htmlFile, err)
			}
			c.note(fmt.Sprintf("wrote %s: the report, with the charts and the receipts of the %d compactions", *htmlFile, report.Total.Compactions))
		}
		if report.Total.InvalidRequests > 0 {
			return fmt.Errorf("replay: %s", invalidSummary(report))
		}
		return nil
	}
}

// replayTerms explains the replay's terms (replay.Terms), one paragraph
// each, for the help.
func replayTerms() string {
	var b strings.Builder
	for _, t := range replay.Terms {
		b.WriteString("  " + t.Name + "\n" + wrap(t.About, "        ", 76))
	}
	return b.String()
}

// writeHTML writes the report's HTML to path.
func writeHTML(path string, report *replay.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteHTML(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// plotNote says what the plot written to path shows: the transcripts
// plotted, of all replayed.
func plotNote(path string, plotted []string, replayed int) string {
	msg := fmt.Sprintf("wrote %s: estimated prompt tokens per request, one panel for each of the %d transcripts", path, len(plotted))
	if len(plotted) == 1 {
		msg = fmt.Sprintf("wrote %s: estimated prompt tokens per request of %s", path, replay.DisplayName(plotted[0]))
	}
	if n := replayed - len(plotted); n > 0 {
		msg += fmt.Sprintf(" (%d with no request not drawn)", n)
	}
	return msg
}

// invalidSummary says how many of a report's requests were invalid, in
// which transcripts, and what the first was.
func invalidSummary(r *replay.Report) string {
	const most = 5 // transcripts named
	t := r.Total
	var where []string
	more := 0
	for _, x := range r.Results {
		switch {
		case x.InvalidRequests == 0:
		case len(where) == most:
			more++
		default:
			where = append(where, fmt.Sprintf("%d in %s", x.InvalidRequests, x.File))
		}
	}
	if more > 0 {
		where = append(where, fmt.Sprintf("and in %d more transcripts", more))
	}
	return fmt.Sprintf("%d of %d requests invalid (%s); first: %s",
		t.InvalidRequests, t.Requests, strings.Join(where, ", "), t.FirstError)
}

// transcriptFiles returns the files named in args, a directory standing
// for the .json files it holds (in name order); a name that does not exist,
// or a directory without a .json file, is an error naming it.
func transcriptFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		in, err := filepath.Glob(filepath.Join(a, "*.json"))
		if err != nil {
			return nil, err
		}
		if len(in) == 0 {
			return nil, fmt.Errorf("%s: a directory with no .json transcript", a)
		}
		files = append(files, in...)
	}
	return files, nil
}
