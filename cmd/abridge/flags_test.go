package main

import (
	"encoding/json"
	"flag"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/cmd/abridge/internal/replay"
)

// TestParseFlags checks that every flag of every command is taken wherever
// it stands among the operands, in each of its forms, and that the
// operands keep their order.
func TestParseFlags(t *testing.T) {
	for _, cmd := range commands() {
		commandFlags(cmd).VisitAll(func(f *flag.Flag) {
			want := "v"
			if commandFlags(cmd).Set(f.Name, want) != nil {
				want = "3s" // a duration's
			}
			forms := [][]string{{"--" + f.Name, want}, {"-" + f.Name, want}, {"--" + f.Name + "=" + want}}
			if isBool(f) {
				want = "true"
				forms = [][]string{{"--" + f.Name}, {"-" + f.Name}, {"--" + f.Name + "=true"}}
			}
			for _, form := range forms {
				for _, at := range []int{0, 1, 2} { // before, between and after the operands
					args := append([]string{"A", "B"}[:at:at], form...)
					args = append(args, []string{"A", "B"}[at:]...)
					fs := commandFlags(cmd)
					operands, err := parseFlags(fs, args)
					if err != nil {
						t.Errorf("%s %s: %v", cmd.name, strings.Join(args, " "), err)
						continue
					}
					if diff := cmp.Diff([]string{"A", "B"}, operands); diff != "" {
						t.Errorf("%s %s: operands (-want +got):\n%s", cmd.name, strings.Join(args, " "), diff)
					}
					if got := fs.Lookup(f.Name).Value.String(); got != want {
						t.Errorf("%s %s: --%s = %q, want %q", cmd.name, strings.Join(args, " "), f.Name, got, want)
					}
				}
			}
		})
	}
}

// TestParseFlagsOperands checks what is an operand: anything after "--",
// "-" (stdin), and a flag's value, even when it looks like a flag.
func TestParseFlagsOperands(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		want  []string
		focus string
	}{
		{name: "after --", args: []string{"--", "--focus", "-x"}, want: []string{"--focus", "-x"}},
		{name: "flags before --", args: []string{"a", "--focus", "f", "--", "--b"}, want: []string{"a", "--b"}, focus: "f"},
		{name: "stdin", args: []string{"-", "--focus", "f"}, want: []string{"-"}, focus: "f"},
		{name: "a value like a flag", args: []string{"--focus", "--", "a"}, want: []string{"a"}, focus: "--"},
		{name: "a value like a flag, with =", args: []string{"a", "--focus=--x"}, want: []string{"a"}, focus: "--x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := commandFlags(compactCommand)
			got, err := parseFlags(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("operands (-want +got):\n%s", diff)
			}
			if f := fs.Lookup("focus").Value.String(); f != tt.focus {
				t.Errorf("--focus = %q, want %q", f, tt.focus)
			}
		})
	}
}

// TestFlagsAfterOperands runs commands with their flags after their
// operands, as "abridge replay FILE --wide" is typed.
func TestFlagsAfterOperands(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		code  int
		check func(t *testing.T, r result)
	}{
		{name: "replay --wide", args: []string{"replay", "testdata/history.json", "--wide"}, check: func(t *testing.T, r result) {
			widest := 0
			for l := range strings.SplitSeq(r.stdout, "\n") {
				widest = max(widest, utf8.RuneCountInString(l))
			}
			if widest <= replay.TableWidth {
				t.Errorf("the table is %d columns wide, not the wide table:\n%s", widest, r.stdout)
			}
		}},
		{name: "replay --json", args: []string{"replay", "testdata/history.json", "--mode", "full", "--json"}, check: func(t *testing.T, r result) {
			var report replay.Report
			if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || report.Options.Mode != "full" {
				t.Errorf("stdout is not the JSON report of mode full (%v, mode %q):\n%s", err, report.Options.Mode, r.stdout)
			}
		}},
		{name: "compact --focus", args: []string{"compact", "testdata/history.json", "--focus", "the bug"}, check: func(t *testing.T, r result) {
			if !strings.Contains(r.stderr, "cannot follow the focus") {
				t.Errorf("stderr does not say the digest cannot follow the focus:\n%s", r.stderr)
			}
		}},
		{name: "process --help", args: []string{"process", "testdata/history.json", "--help"}, check: func(t *testing.T, r result) {
			if !strings.HasPrefix(r.stdout, "Usage: abridge process") {
				t.Errorf("stdout is not process's help:\n%s", r.stdout)
			}
		}},
		{name: "process a bad flag", args: []string{"process", "testdata/history.json", "--bogus"}, code: exitUsage, check: func(t *testing.T, r result) {
			if !strings.Contains(r.stderr, "abridge: process: flag provided but not defined: -bogus") {
				t.Errorf("stderr does not name the flag:\n%s", r.stderr)
			}
		}},
		{name: "sessions show a bad flag", args: []string{"sessions", "show", "s", "--bogus"}, code: exitUsage, check: func(t *testing.T, r result) {
			if !strings.Contains(r.stderr, "abridge: sessions: flag provided but not defined: -bogus") {
				t.Errorf("stderr does not name the flag:\n%s", r.stderr)
			}
		}},
		{name: "serve an operand", args: []string{"serve", "extra", "--addr", "127.0.0.1:1"}, code: exitUsage, check: func(t *testing.T, r result) {
			if !strings.Contains(r.stderr, "abridge: serve: unexpected arguments: extra\n") {
				t.Errorf("stderr does not name the operand alone:\n%s", r.stderr)
			}
		}},
		{name: "chat an operand", args: []string{"chat", "hello", "--session", "s"}, code: exitUsage, check: func(t *testing.T, r result) {
			if !strings.Contains(r.stderr, "abridge: chat: unexpected arguments: hello\n") {
				t.Errorf("stderr does not name the operand alone:\n%s", r.stderr)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, "", tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, tt.code, r.stderr)
			}
			tt.check(t, r)
		})
	}
}
