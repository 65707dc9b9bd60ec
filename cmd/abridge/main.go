// Command abridge replays, processes and compacts agent conversations with
// abridge's history processors, runs an interactive agent that stays
// inside its context window, and serves an OpenAI-compatible proxy that
// compacts the requests of any OpenAI client.
//
// Usage:
//
//	abridge replay [--wide | --json] [--plot FILE] [--mode processed|full|fresh] [FILE...]
//	abridge process FILE
//	abridge compact [--focus TEXT] FILE
//	abridge chat [--session NAME]
//	abridge sessions [show NAME]
//	abridge serve [--addr HOST:PORT]
//	abridge help [COMMAND]
//	abridge --version
//
// Histories are OpenAI Chat Completions JSON: a bare array of messages or an
// object with a "messages" array. With no model endpoint configured
// (OPENAI_API_KEY or OPENAI_BASE_URL) abridge summarizes with its offline
// digest and says so. A command's flags go before or after its arguments
// (abridge replay FILE --wide). Run "abridge help" for the environment
// variables.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/abridge-go/abridge/config"
)

func main() {
	// SIGTERM ends whatever runs; an interrupt (Ctrl-C) is the command's to
	// handle (see run).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	code := run(ctx, interrupts, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, environ(os.Environ()))
	signal.Stop(interrupts)
	stop()
	os.Exit(code)
}

// environ turns "KEY=value" pairs into a map.
func environ(pairs []string) map[string]string {
	m := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// cli is what every command runs with: its standard streams, its
// environment, and, for a command that handles interrupts itself, the
// interrupts.
type cli struct {
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	environ map[string]string
	// interrupts receives an interrupt (Ctrl-C) each time the user sends
	// one, when the command's ownsInterrupts is set; nil otherwise.
	interrupts <-chan os.Signal
}

// command is one subcommand of abridge.
type command struct {
	name    string
	summary string
	// usage is the synopsis, e.g. "abridge process FILE".
	usage string
	// about is the paragraph printed after the synopsis.
	about string
	// env lists the groups of environment variables that matter to the
	// command; its help lists every variable of these groups.
	env []config.Group
	// logLevel is the command's log level when ABRIDGE_LOG_LEVEL is unset;
	// "" means warn.
	logLevel string
	// flags declares the command's flags on fs and returns the function
	// that runs the command with the remaining arguments; nil for help,
	// which run handles itself.
	flags func(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error
	// ownsInterrupts is set for a command that reads the interrupts from
	// its cli and decides what each one does. Any other command's context
	// is cancelled by the first interrupt.
	ownsInterrupts bool
}

func commands() []*command {
	return []*command{replayCommand, processCommand, compactCommand, chatCommand, sessionsCommand, serveCommand}
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// usageError is a mistake in how abridge was called; it exits with 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// run runs abridge with the given arguments (without the program name),
// streams and environment, and returns the exit code. The end of ctx ends
// any command; each value received from interrupts is an interrupt
// (Ctrl-C), which cancels the command's context unless the command owns its
// interrupts (chat does). A nil interrupts never delivers one.
func run(ctx context.Context, interrupts <-chan os.Signal, args []string, stdin io.Reader, stdout, stderr io.Writer, env map[string]string) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, environ: env}
	if env == nil {
		c.environ = map[string]string{}
	}
	if len(args) == 0 {
		writeMainUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help":
		return runHelp(args[1:], stdout, stderr)
	case "-h", "-help", "--help":
		writeMainUsage(stdout)
		return exitOK
	case "-version", "--version":
		info, ok := debug.ReadBuildInfo()
		fmt.Fprintln(stdout, version(info, ok))
		return exitOK
	}
	cmd := lookup(args[0])
	if cmd == nil {
		if strings.HasPrefix(args[0], "-") {
			return fail(stderr, usagef("unknown flag %s before the command (commands: %s)", args[0], commandNames()))
		}
		return fail(stderr, usagef("unknown command %q (commands: %s)", args[0], commandNames()))
	}
	fs := newFlagSet(cmd)
	runCmd := cmd.flags(fs)
	operands, err := parseFlags(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeCommandUsage(stdout, cmd, fs)
			return exitOK
		}
		return fail(stderr, usagef("%s: %v (see abridge %s --help)", cmd.name, err, cmd.name))
	}
	if cmd.ownsInterrupts {
		c.interrupts = interrupts
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go cancelOnInterrupt(ctx, cancel, interrupts)
	}
	if err := runCmd(ctx, c, operands); err != nil {
		return fail(stderr, err)
	}
	return exitOK
}

// version describes the build abridge runs from: its module version and
// the revision it was built from, as the Go toolchain recorded them.
func version(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "abridge (no build information)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(unknown version)"
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	out := "abridge " + v
	if rev != "" {
		out += ", commit " + rev
		if at != "" {
			out += " of " + at
		}
		if modified {
			out += ", with uncommitted changes"
		}
	}
	return out + ", " + info.GoVersion
}

// helpCommand describes "abridge help" for its own help; run handles it
// before looking commands up.
var helpCommand = &command{
	name:    "help",
	summary: "print this help, or a command's help with its flags",
	usage:   "abridge help [COMMAND]",
	about: `Help prints what abridge does, its commands and every environment
variable it reads. "abridge help COMMAND" prints the command's usage, its
flags and the variables that matter to it, as "abridge COMMAND --help" does.`,
}

// runHelp runs "abridge help" with the arguments after "help": none prints
// the main usage; a command's name prints that command's help; "help",
// -h or --help prints help's own. A help flag after the command's name
// asks for the same help.
func runHelp(args []string, stdout, stderr io.Writer) int {
	var names []string
	for _, a := range args {
		switch {
		case isHelpFlag(a):
		case strings.HasPrefix(a, "-"):
			return fail(stderr, usagef("help: flag provided but not defined: %s (see abridge help help)", a))
		default:
			names = append(names, a)
		}
	}
	switch {
	case len(args) == 0:
		writeMainUsage(stdout)
		return exitOK
	case len(names) > 1:
		return fail(stderr, usagef("help: want at most one COMMAND, got %d: %s", len(names), strings.Join(names, " ")))
	}
	cmd := helpCommand
	if len(names) == 1 && names[0] != helpCommand.name {
		if cmd = lookup(names[0]); cmd == nil {
			return fail(stderr, usagef("help: unknown command %q (commands: %s)", names[0], commandNames()))
		}
	}
	writeCommandUsage(stdout, cmd, commandFlags(cmd))
	return exitOK
}

// isHelpFlag reports whether arg asks for help the way the flag package
// takes it: -h, -help, --h or --help.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

// commandFlags returns cmd's flag set with its flags declared, for its
// help.
func commandFlags(cmd *command) *flag.FlagSet {
	fs := newFlagSet(cmd)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	return fs
}

// cancelOnInterrupt calls cancel on the first interrupt, and returns then
// or once ctx is done.
func cancelOnInterrupt(ctx context.Context, cancel context.CancelFunc, interrupts <-chan os.Signal) {
	select {
	case <-interrupts:
		cancel()
	case <-ctx.Done():
	}
}

// parseFlags sets the flags of fs found anywhere in args and returns the
// other arguments, the operands, in their order: "abridge replay FILE
// --wide" is "abridge replay --wide FILE". A flag that takes a value takes
// the next argument ("--focus TEXT") unless it is written "--focus=TEXT".
// Everything after "--" is an operand, and so is "-" (stdin).
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if f := fs.Lookup(name); f != nil && !hasValue && !isBool(f) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		default:
			operands = append(operands, a)
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	return operands, nil
}

// isBool reports whether f is a flag that takes no value (--wide).
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func newFlagSet(cmd *command) *flag.FlagSet {
	fs := flag.NewFlagSet("abridge "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// fail prints err as one line and returns its exit code.
func fail(stderr io.Writer, err error) int {
	msg := oneLine(err.Error())
	fmt.Fprintf(stderr, "abridge: %s\n", msg)
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

// oneLine joins the lines of a message with "; " and collapses white space.
func oneLine(msg string) string {
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

func commandNames() string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

// envSession is the variable naming the session store.
const envSession = config.Prefix + "SESSION_DB"

// level returns the command's log level when ABRIDGE_LOG_LEVEL is unset.
func (cmd *command) level() string {
	if cmd.logLevel == "" {
		return "warn"
	}
	return cmd.logLevel
}

// writeEnv lists the variables of cmd's groups with their defaults and
// meaning; a nil cmd lists them all.
func writeEnv(b *strings.Builder, cmd *command) {
	vars := config.Variables()
	if cmd != nil {
		vars = config.VariablesIn(cmd.env...)
	}
	for _, v := range vars {
		def := strings.TrimSuffix(strings.TrimPrefix(v.Default, "("), ")")
		switch {
		case v.Name == logLevelVar && cmd != nil:
			def = cmd.level()
		case v.Name == logLevelVar:
			def = "warn; info for serve"
		case v.Name == envSession:
			def = sessionDefault()
		}
		fmt.Fprintf(b, "  %s (default: %s)\n", v.Name, def)
		b.WriteString(wrap(v.Description, "        ", 76))
	}
}

// wrap fills text into lines of at most width characters, each indented.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
	return b.String()
}

func writeMainUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("abridge keeps LLM agents inside their context window.\n\nUsage:\n\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %s\n", c.usage)
	}
	fmt.Fprintf(&b, "  %s\n  abridge --version\n\nCommands:\n\n", helpCommand.usage)
	for _, c := range append(commands(), helpCommand) {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nHistories are OpenAI Chat Completions JSON: a bare array of messages or\n")
	b.WriteString("{\"messages\": [...]}. Without OPENAI_API_KEY or OPENAI_BASE_URL abridge\n")
	b.WriteString("summarizes with its offline digest. Errors are one line on stderr; the exit\n")
	b.WriteString("code is 2 for a usage mistake and 1 for any other failure. A command's flags\n")
	b.WriteString("go before or after its arguments; after \"--\" everything is an argument.\n\nEnvironment:\n\n")
	writeEnv(&b, nil)
	b.WriteString("\nRun \"abridge help COMMAND\" (or \"abridge COMMAND --help\") for a command's flags.\n")
	io.WriteString(w, b.String())
}

func writeCommandUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n%s\n", cmd.usage, strings.TrimSpace(cmd.about))
	var flags strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(&flags, "%s\n%s", line, wrap(usage, "        ", 76))
	})
	flags.WriteString("  --help\n        print this help\n")
	fmt.Fprintf(&b, "\nFlags:\n\n%s", flags.String())
	if len(cmd.env) > 0 {
		b.WriteString("\nEnvironment:\n\n")
		writeEnv(&b, cmd)
	}
	io.WriteString(w, b.String())
}
