package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/session/sqlite"
)

var sessionsCommand = &command{
	name:    "sessions",
	summary: "list the saved chat sessions, or show one",
	usage:   "abridge sessions [show NAME]",
	about: `Sessions lists the conversations saved by "abridge chat --session NAME":
the messages saved, those in the working history (what the next turn
sends), the compactions and the withdrawn turns (turns that failed or were
interrupted, kept in the transcript but never sent again). "abridge
sessions show NAME" prints one session's full transcript, every message
ever saved, with the compactions and withdrawn turns marked where they
happened. Neither creates the session store when there is none.`,
	env:   []config.Group{config.GroupSession, config.GroupLog},
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
		// Reading creates nothing: no store means no sessions yet.
		store, err := openStore(ctx, env.cfg.SessionDB, env.logger, false)
		if errors.Is(err, iofs.ErrNotExist) {
			if show != "" {
				return fmt.Errorf("sessions show: no session %q (there are none yet)", show)
			}
			fmt.Fprintln(c.stdout, "no sessions yet (start one with: abridge chat --session NAME)")
			return nil
		}
		if err != nil {
			return fmt.Errorf("sessions: %w", err)
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
		fmt.Fprintln(tw, "NAME\tMESSAGES\tWORKING\tCOMPACTIONS\tWITHDRAWN\tUPDATED")
		for _, in := range infos {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", in.Name, in.Messages, in.Working, in.Compactions, in.Withdrawn, in.Updated.Local().Format(time.DateTime))
		}
		return tw.Flush()
	}
}

func showSession(ctx context.Context, c *cli, store *session.Store, name string) error {
	infos, err := store.List(ctx)
	if err != nil {
		return fmt.Errorf("sessions show: %w", err)
	}
	var (
		info  session.Info
		found bool
		names []string
	)
	for _, in := range infos {
		if in.Name == name {
			info, found = in, true
		}
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
	added := 0 // the messages compactions wrote: summaries, trimmed copies
	for _, comp := range comps {
		added += len(comp.Inserted)
	}
	fmt.Fprintf(c.stdout, "session %q: %s saved and %d added by compactions, %d in the working history; %s, %s\n", name,
		plural(info.Messages, "message"), added, info.Working, plural(info.Compactions, "compaction"), plural(info.Withdrawn, "withdrawn turn"))
	if err := session.Format(c.stdout, entries, comps); err != nil {
		return fmt.Errorf("sessions show: %w", err)
	}
	return nil
}

// sessionDefault describes ABRIDGE_SESSION_DB's default for the help: the
// SQLite file it names here.
func sessionDefault() string {
	path, err := sqlite.DefaultPath()
	if err != nil {
		return "a SQLite file"
	}
	return "a SQLite file, " + path
}

// openStore opens the session store ABRIDGE_SESSION_DB (dsn) names (see
// config.SessionDriver); unless create is set, a SQLite file is opened only
// when it exists. Its errors name the variable. A SQLite file in a
// directory that does not exist is refused (see checkSessionDir) before
// anything is created.
func openStore(ctx context.Context, dsn string, logger *zap.Logger, create bool) (*session.Store, error) {
	if err := checkSessionDir(dsn); err != nil {
		return nil, err
	}
	d, err := config.SessionDriver(dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: open session store: %w", envSession, err)
	}
	if file, ok := d.(sqlite.Driver); ok {
		file.Existing = !create
		d = file
	}
	store, err := session.Open(ctx, d, logger)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envSession, err) // "open session store: …"
	}
	return store, nil
}

// describeStore says which database dsn names, with nothing a password
// could hide in: "PostgreSQL", or "SQLite " and the file's path; "" when
// it names none.
func describeStore(dsn string) string {
	d, err := config.SessionDriver(dsn)
	if err != nil {
		return ""
	}
	return d.String()
}

// checkSessionDir returns an error naming ABRIDGE_SESSION_DB when dsn
// names a SQLite file whose directory does not exist, a mistyped path the
// store would otherwise create; abridge's own default directory (that of
// sqlite.DefaultPath) is created when missing. Other DSNs pass:
// config.SessionDriver and session.Open refuse the ones they cannot read
// with errors of their own.
func checkSessionDir(dsn string) error {
	d, err := config.SessionDriver(dsn)
	file, ok := d.(sqlite.Driver)
	if err != nil || !ok {
		return nil
	}
	path := file.Path
	dir := filepath.Dir(path)
	def, err := sqlite.DefaultPath()
	if err == nil && dir == filepath.Dir(def) {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return fmt.Errorf("%s names %s, in %s, which does not exist: create the directory, or unset %s for the default (%s)",
			envSession, path, dir, envSession, sessionDefault())
	case err != nil:
		return fmt.Errorf("%s names %s: %w", envSession, path, err)
	case !st.IsDir():
		return fmt.Errorf("%s names %s, in %s, which is not a directory", envSession, path, dir)
	}
	return nil
}
