package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
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
