package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/abridge-go/abridge/session/sqlite"
)

// TestSessionsShowRollingCompactions runs a chat whose window compacts
// again and again (a rolling summary), then shows its session: every
// message saved is listed, the summary markers included, each compaction
// says what it took out and put in, with the summary's own text, and the
// heading's counts add up to the last message's number.
func TestSessionsShowRollingCompactions(t *testing.T) {
	for _, varying := range []bool{false, true} {
		name := "the same summary each time"
		if varying {
			name = "a new summary each time"
		}
		t.Run(name, func(t *testing.T) { testSessionsShowRolling(t, varying) })
	}
}

// testSessionsShowRolling is TestSessionsShowRollingCompactions with a
// summarizer that writes the same summary each time, whose marker a
// rolling compaction keeps, or a new one each time.
func testSessionsShowRolling(t *testing.T, varying bool) {
	f := newFakeOpenAI(t)
	summaries := 0
	f.intercept = func(_ http.ResponseWriter, _ *http.Request, req chatRequest) bool {
		if varying && req.summary() {
			summaries++
			f.summary = fmt.Sprintf("SUMMARY number %d of the conversation so far.", summaries)
		}
		return false
	}
	env := f.env("ABRIDGE_SESSION_DB", filepath.Join(t.TempDir(), "s.db"), "ABRIDGE_MAX_MESSAGES", "6")
	var in []string
	for i := 1; i <= 8; i++ {
		in = append(in, padded(fmt.Sprintf("turn %d", i)))
	}
	if r := runCLI(t, env, strings.Join(in, "\n")+"\n", "chat", "--session", "win"); r.code != 0 {
		t.Fatalf("chat: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	r := runCLI(t, env, "", "sessions", "show", "win")
	if r.code != 0 {
		t.Fatalf("sessions show: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	out := r.stdout
	rows := regexp.MustCompile(`(?m)^\s+(\d+) [ cw+] `).FindAllStringSubmatch(out, -1)
	for i, m := range rows {
		if m[1] != strconv.Itoa(i+1) {
			t.Fatalf("row %d is message %s: the listing skips messages\n%s", i+1, m[1], out)
		}
	}
	head := regexp.MustCompile(`^session "win": (\d+) messages saved and (\d+) added by compactions`).FindStringSubmatch(out)
	if head == nil {
		t.Fatalf("heading does not count the messages saved and added:\n%s", out)
	}
	saved, _ := strconv.Atoi(head[1])
	added, _ := strconv.Atoi(head[2])
	if saved+added != len(rows) || added == 0 {
		t.Errorf("heading counts %d saved + %d added, the listing %d messages:\n%s", saved, added, len(rows), out)
	}
	if strings.Contains(out, "replaced by nothing") || strings.Contains(out, "summary: [abridge") {
		t.Errorf("a compaction is shown as replaced by nothing, or with the marker's preamble for its summary:\n%s", out)
	}
	if !strings.Contains(out, "--- compaction 1: ") || !strings.Contains(out, "summary: "+f.summary[:20]) ||
		!strings.Contains(out, " + summary   "+f.summary[:20]) {
		t.Errorf("compaction 1 does not show its summary's text, and the marker it added:\n%s", out)
	}
	if strings.Count(out, "--- compaction ") < 2 {
		t.Errorf("fewer than two compactions shown:\n%s", out)
	}
	if varying && (strings.Count(out, " summary   SUMMARY number ") != summaries || !strings.Contains(out, " + summary   "+f.summary)) {
		t.Errorf("the %d summaries are not each listed, the last in the working history:\n%s", summaries, out)
	}
}

// TestSessionDBDirectory checks that ABRIDGE_SESSION_DB naming a SQLite
// file in a directory that does not exist is an error naming the variable,
// for every command that opens the store, and that nothing is created;
// abridge's default directory is created when missing.
func TestSessionDBDirectory(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", filepath.Join(t.TempDir(), "xdg")) // the default directory, missing
	dir := filepath.Join(t.TempDir(), "nonexistent", "dir")
	file := filepath.Join(dir, "x.db")
	model := map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
	tests := []struct {
		name string
		dsn  string
		args []string
	}{
		{"chat", file, []string{"chat", "--session", "s"}},
		{"chat sqlite:", "sqlite:" + file, []string{"chat", "--session", "s"}},
		{"serve", file, []string{"serve", "--addr", "127.0.0.1:0"}},
		{"sessions", file, []string{"sessions"}},
		{"sessions show", file, []string{"sessions", "show", "s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := maps.Clone(model)
			env["ABRIDGE_SESSION_DB"] = tt.dsn
			// Without the check, serve would serve: the deadline ends it.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r := <-startCLI(ctx, nil, env, strings.NewReader(""), tt.args...)
			want := fmt.Sprintf("ABRIDGE_SESSION_DB names %s, in %s, which does not exist: create the directory, or unset ABRIDGE_SESSION_DB for the default", file, dir)
			if r.code != exitFailure || !strings.Contains(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr:\n%s\nwant 1 and one line saying %q", r.code, r.stderr, want)
			}
			if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %v, want it not created", filepath.Dir(dir), err)
			}
		})
	}
	t.Run("the default directory", func(t *testing.T) {
		def, err := sqlite.DefaultPath()
		if err != nil {
			t.Fatal(err)
		}
		for _, dsn := range []string{"", def, "sqlite:" + def} {
			if err := checkSessionDir(dsn); err != nil {
				t.Errorf("checkSessionDir(%q) = %v, want nil: abridge creates its default directory", dsn, err)
			}
		}
		r := runCLI(t, model, "", "chat", "--session", "s")
		if r.code != exitOK {
			t.Fatalf("chat on the default store: exit %d; stderr:\n%s", r.code, r.stderr)
		}
		if _, err := os.Stat(def); err != nil {
			t.Errorf("the default store was not created: %v", err)
		}
	})
	t.Run("a file for a directory", func(t *testing.T) {
		notDir := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(notDir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		err := checkSessionDir(filepath.Join(notDir, "x.db"))
		if want := "which is not a directory"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkSessionDir = %v, want an error saying %q", err, want)
		}
	})
	for _, dsn := range []string{"postgres://abridge@db/abridge", "host=db dbname=abridge", filepath.Join(t.TempDir(), "x.db"), "x.db"} {
		if err := checkSessionDir(dsn); err != nil {
			t.Errorf("checkSessionDir(%q) = %v, want nil", dsn, err)
		}
	}
}
