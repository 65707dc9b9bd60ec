package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/abridge-go/abridge/internal/agenttest"
)

// agentTask is the task the fake upstreams script for the agents: 16
// tool rounds, each showing a file of about 6 KB.
var agentTask = agenttest.Task{Parts: 16, PartBytes: 6000}

// needAgent returns the path of an agent's executable installed by npm ci
// in nodeClientDir ("codex" or "claude"), or skips the test (fails it
// under CI=true) when it is missing.
func needAgent(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join(nodeClientDir, "node_modules", ".bin", name))
	if err == nil {
		_, err = os.Stat(path)
	}
	if err != nil {
		msg := fmt.Sprintf("%s is not installed: run npm ci --prefix cmd/abridge/%s", name, nodeClientDir)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// agentRun is one run of an agent on agentTask.
type agentRun struct {
	stdout, stderr string
}

// runAgent runs the command in a fresh work directory holding the task's
// files, with HOME in a temporary directory, and fails the test unless it
// exits 0.
func runAgent(t *testing.T, env []string, name string, args ...string) agentRun {
	t.Helper()
	work, home := t.TempDir(), t.TempDir()
	if err := agentTask.WriteFiles(work); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = work
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb", "NO_COLOR=1"}, env...)
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), err, stdout.String(), tail(stderr.String(), 4000))
	}
	return agentRun{stdout: stdout.String(), stderr: stderr.String()}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// codexHome writes a Codex configuration pointing the model provider
// "abridge" at baseURL (…/v1) with the Responses wire, and returns the
// environment that makes codex use it.
func codexHome(t *testing.T, baseURL string) []string {
	t.Helper()
	dir := t.TempDir()
	config := fmt.Sprintf(`model = "gpt-test"
model_provider = "abridge"
check_for_update_on_startup = false

[model_providers.abridge]
name = "abridge"
base_url = %q
wire_api = "responses"
env_key = "OPENAI_API_KEY"

[analytics]
enabled = false
`, baseURL)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"CODEX_HOME=" + dir, "OPENAI_API_KEY=" + clientKey}
}

// runCodex runs codex exec on the task against baseURL.
func runCodex(t *testing.T, baseURL string) agentRun {
	codex := needAgent(t, "codex")
	return runAgent(t, codexHome(t, baseURL), codex, "exec", "--skip-git-repo-check",
		"--dangerously-bypass-approvals-and-sandbox", "--color", "never",
		"Show me every part_NN.txt file in this directory, one at a time, then say you are done.")
}

// anthropicKey is the key Claude Code and the Anthropic client send.
const anthropicKey = "sk-ant-client-key-for-agent-tests"

// runClaude runs claude -p on the task against baseURL (no /v1).
func runClaude(t *testing.T, baseURL string) agentRun {
	claude := needAgent(t, "claude")
	env := []string{"ANTHROPIC_BASE_URL=" + baseURL, "ANTHROPIC_API_KEY=" + anthropicKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1"}
	return runAgent(t, env, claude, "-p", "--model", "claude-test", "--allowedTools", "Bash", "Read",
		"--", "Show me every part_NN.txt file in this directory, one at a time, then say you are done.")
}

// recordBodies writes the bodies of reqs into $ABRIDGE_RECORD_AGENTS/name
// when that variable is set (to refresh internal/wire/testdata/recorded),
// with every JSON string longer than longString cut (trimLongStrings).
func recordBodies(t *testing.T, name string, reqs []agenttest.Request) {
	dir := os.Getenv("ABRIDGE_RECORD_AGENTS")
	if dir == "" {
		return
	}
	dir = filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("request_%02d.json", i)), trimLongStrings(r.Body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// longString is the length past which a recorded JSON string is cut; the
// fakes' encrypted reasoning and signatures are shorter.
const longString = 1000

// jsonStringLiteral matches a JSON string.
var jsonStringLiteral = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// trimLongStrings returns body with each JSON string longer than
// longString cut to its first 300 characters and a note of how many were
// cut; every other byte stays as it was.
func trimLongStrings(body []byte) []byte {
	return jsonStringLiteral.ReplaceAllFunc(body, func(lit []byte) []byte {
		var s string
		if len(lit) <= longString || json.Unmarshal(lit, &s) != nil {
			return lit
		}
		r := []rune(s)
		if len(r) <= 300 {
			return lit
		}
		out, _ := json.Marshal(fmt.Sprintf("%s[… %d characters cut]", string(r[:300]), len(r)-300))
		return out
	})
}

// checkTaskDone fails the test unless the fake saw no problem and
// scripted every round and the final answer, and the agent printed it.
func checkTaskDone(t *testing.T, problems []string, reqs []agenttest.Request, out string) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
	if !strings.Contains(out, agentTask.Final()) {
		t.Errorf("the agent did not print the final answer %q; stdout:\n%s", agentTask.Final(), tail(out, 2000))
	}
	if len(reqs) < agentTask.Parts+1 {
		t.Errorf("the upstream got %d requests; want at least %d", len(reqs), agentTask.Parts+1)
	}
}

// fakeUpstream is what the tests read from agenttest's fakes.
type fakeUpstream interface {
	http.Handler
	Requests() []agenttest.Request
	Problems() []string
}

// TestAgentsDirect runs each agent on the task straight against its fake
// upstream, without abridge: the fakes drive the real agents through every
// round to the final answer (and, with ABRIDGE_RECORD_AGENTS, record what
// they sent).
func TestAgentsDirect(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Codex CLI and Claude Code")
	}
	for _, tc := range []struct {
		name string
		up   fakeUpstream
		run  func(t *testing.T, baseURL string) agentRun
		path string // added to the server's URL
	}{
		{"codex", &agenttest.Responses{Task: agentTask}, runCodex, "/v1"},
		{"claude", &agenttest.Messages{Task: agentTask}, runClaude, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.up)
			defer srv.Close()
			run := tc.run(t, srv.URL+tc.path)
			reqs := tc.up.Requests()
			recordBodies(t, tc.name, reqs)
			checkTaskDone(t, tc.up.Problems(), reqs, run.stdout)
		})
	}
}
