package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/abridge-go/abridge/session"
)

var sessionsCommand = &command{
	name:    "sessions",
	summary: "list the saved chat sessions, or show one",
	usage:   "abridge sessions [show NAME]",
	about: `Sessions lists the conversations saved by "abridge chat --session NAME"
with their message and compaction counts. "abridge sessions show NAME"
prints one session's full transcript, every message ever saved, with the
compactions marked where they happened.`,
	env:   vars([]string{envSession}, envLog),
	flags: sessionsFlags,
}

func sessionsFlags(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		var show string
		switch {
		case len(args) == 0:
		case args[0] == "show" && len(args) == 2:
			show = args[1]
		case args[0] == "show":
			return usagef("sessions show: want one NAME, got %d arguments", len(args)-1)
		default:
			return usagef("sessions: unknown subcommand %q (want: abridge sessions [show NAME])", args[0])
		}
		env, err := c.setup()
		if err != nil {
			return err
		}
		defer env.close()
		store, err := session.Open(ctx, env.cfg.SessionDB, env.logger)
		if err != nil {
			return fmt.Errorf("sessions: %s: %w", envSession, err) // "open session store: …"
		}
		defer store.Close()
		if show != "" {
			return showSession(ctx, c, store, show)
		}
		infos, err := store.List(ctx)
		if err != nil {
			return fmt.Errorf("sessions: %w", err)
		}
		if len(infos) == 0 {
			fmt.Fprintln(c.stdout, "no sessions yet (start one with: abridge chat --session NAME)")
			return nil
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tMESSAGES\tWORKING\tCOMPACTIONS\tUPDATED")
		for _, in := range infos {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", in.Name, in.Messages, in.Working, in.Compactions, in.Updated.Local().Format(time.DateTime))
		}
		return tw.Flush()
	}
}

func showSession(ctx context.Context, c *cli, store session.Store, name string) error {
	infos, err := store.List(ctx)
	if err != nil {
		return fmt.Errorf("sessions show: %w", err)
	}
	found := false
	var names []string
	for _, in := range infos {
		found = found || in.Name == name
		names = append(names, in.Name)
	}
	if !found {
		if len(names) == 0 {
			return fmt.Errorf("sessions show: no session %q (there are none yet)", name)
		}
		return fmt.Errorf("sessions show: no session %q (have: %s)", name, strings.Join(names, ", "))
	}
	sess, err := store.Session(ctx, name)
	if err != nil {
		return fmt.Errorf("sessions show: %w", err)
	}
	entries, err := sess.Transcript(ctx)
	if err != nil {
		return fmt.Errorf("sessions show: %w", err)
	}
	comps, err := sess.Compactions(ctx)
	if err != nil {
		return fmt.Errorf("sessions show: %w", err)
	}
	if err := session.Format(c.stdout, entries, comps); err != nil {
		return fmt.Errorf("sessions show: %w", err)
	}
	return nil
}
