package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/testkit/agenttest"
	"github.com/abridge-go/abridge/testkit/openaitest"
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
	return runAgentIn(t, t.TempDir(), env, name, args...)
}

// runAgentIn is runAgent in the work directory work.
func runAgentIn(t *testing.T, work string, env []string, name string, args ...string) agentRun {
	t.Helper()
	home := t.TempDir()
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

// nodeLoop returns how to run testdata/npm/loop.mjs on the task with the
// openai client (api "responses", baseURL …/v1) or the Anthropic one
// ("messages", baseURL without /v1).
func nodeLoop(api string) func(t *testing.T, baseURL string) agentRun {
	return func(t *testing.T, baseURL string) agentRun {
		node := needNode(t)
		if _, err := os.Stat(filepath.Join(nodeClientDir, "node_modules", "@anthropic-ai", "sdk", "package.json")); err != nil {
			t.Skipf("the @anthropic-ai/sdk npm package is not installed: run npm ci --prefix cmd/abridge/%s", nodeClientDir)
		}
		script, err := filepath.Abs(filepath.Join(nodeClientDir, "loop.mjs"))
		if err != nil {
			t.Fatal(err)
		}
		work := t.TempDir()
		env := []string{"API=" + api, "WORKDIR=" + work,
			"OPENAI_BASE_URL=" + baseURL, "OPENAI_API_KEY=" + clientKey,
			"ANTHROPIC_BASE_URL=" + baseURL, "ANTHROPIC_API_KEY=" + anthropicKey}
		return runAgentIn(t, work, env, node, script)
	}
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
		{"openai-node", &agenttest.Responses{Task: agentTask}, nodeLoop("responses"), "/v1"},
		{"anthropic-node", &agenttest.Messages{Task: agentTask}, nodeLoop("messages"), ""},
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

// hop is a recording reverse proxy between a client and abridge serve: it
// keeps the bodies and headers of the POSTs whose path ends in one of its
// suffixes, as the client wrote them.
type hop struct {
	url string
	mu  sync.Mutex
	// bodies and headers hold the recorded requests', in order.
	bodies  [][]byte
	headers []http.Header
}

// newHop starts a hop in front of target (a URL with no path) recording
// the POSTs to paths ending in one of suffixes.
func newHop(t *testing.T, target string, suffixes ...string) *hop {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	h := &hop{}
	rp := httputil.NewSingleHostReverseProxy(to)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, s := range suffixes {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, s) {
				data, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(data))
				h.mu.Lock()
				h.bodies = append(h.bodies, data)
				h.headers = append(h.headers, r.Header.Clone())
				h.mu.Unlock()
				break
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// Bodies returns the recorded bodies.
func (h *hop) Bodies() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.bodies...)
}

// Headers returns the recorded headers.
func (h *hop) Headers() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]http.Header(nil), h.headers...)
}

// credentialHeaders are the headers of a client's credentials and API
// version, which serve forwards as they are.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Anthropic-Version", "Anthropic-Beta"}

// opaqueValues returns what abridge must pass on unchanged in a history
// (the raw JSON of a Responses input or of Anthropic messages): the
// encrypted content of each reasoning item, and each thinking block's
// text with its signature and each redacted thinking block's data.
func opaqueValues(history []byte) (map[string]bool, error) {
	var items []struct {
		Type             string          `json:"type"`
		EncryptedContent *string         `json:"encrypted_content"`
		Content          json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(history, &items); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, it := range items {
		if it.Type == "reasoning" && it.EncryptedContent != nil {
			out["encrypted_content "+*it.EncryptedContent] = true
		}
		var blocks []struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
			Data      string `json:"data"`
		}
		if len(it.Content) == 0 || it.Content[0] != '[' || json.Unmarshal(it.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			switch b.Type {
			case "thinking":
				out["thinking "+b.Thinking+" signed "+b.Signature] = true
			case "redacted_thinking":
				out["redacted_thinking "+b.Data] = true
			}
		}
	}
	return out, nil
}

// checkAgentForwarded compares got, a body the upstream received, with
// sent, the body the client sent, as openaitest.CheckForwardedAPI does
// (every byte outside the history the same; the history the client's,
// trimmed, or its head, one summary marker and its tail; one the API
// accepts), and checks that it holds no encrypted reasoning, thinking or
// signature the client did not send.
func checkAgentForwarded(codec wire.Codec, sent, got []byte) (openaitest.Forwarded, error) {
	f, err := openaitest.CheckForwardedAPI(codec, sent, got, trimtools.New(trimtools.Options{}))
	if err != nil {
		return f, err
	}
	key := "messages"
	if codec.API() == "responses" {
		key = "input"
	}
	sentHist, _, _ := openaitest.SplitField(sent, key)
	gotHist, _, _ := openaitest.SplitField(got, key)
	sentOpaque, err := opaqueValues(sentHist)
	if err != nil {
		return f, fmt.Errorf("client's %s: %w", key, err)
	}
	gotOpaque, err := opaqueValues(gotHist)
	if err != nil {
		return f, fmt.Errorf("upstream's %s: %w", key, err)
	}
	for v := range gotOpaque {
		if !sentOpaque[v] {
			return f, fmt.Errorf("the upstream got %.120q, which the client did not send", v)
		}
	}
	return f, nil
}

// TestAgentsThroughServe runs each agent and official client on the task
// through abridge serve, whose window compacts past 12 messages, in front
// of the fake upstreams (OPENAI_BASE_URL for Responses, ANTHROPIC_BASE_URL
// for Messages): each completes the task; every request reaches the
// upstream valid (the fakes check each call has its output, each
// tool_result follows its tool_use, and encrypted reasoning and signed
// thinking come back as they were given), byte-identical outside its
// history to what the client sent, with the client's history (trimmed) or
// its head, one summary marker and its tail (checkAgentForwarded); at
// least one arrives compacted; the client's key reaches the upstream and
// not serve's log; and every summary is a request of the client's own API
// at its own upstream, paid with its own key (serve has none).
func TestAgentsThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Codex CLI, Claude Code and the npm clients")
	}
	for _, tc := range []struct {
		name string
		api  string // "responses" or "messages"
		run  func(t *testing.T, baseURL string) agentRun
	}{
		{"codex", "responses", runCodex},
		{"claude", "messages", runClaude},
		{"openai-node", "responses", nodeLoop("responses")},
		{"anthropic-node", "messages", nodeLoop("messages")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			openai := &agenttest.Responses{Task: agentTask}
			anthropic := &agenttest.Messages{Task: agentTask}
			env, _ := serveBoth(t, openai, anthropic)
			env["ABRIDGE_MAX_MESSAGES"] = "12"
			srv := startServe(t, env)
			root := strings.TrimSuffix(srv.base, "/v1")
			var up fakeUpstream = openai
			suffix, base := "/responses", root+"/v1"
			if tc.api == "messages" {
				up, suffix, base = anthropic, "/v1/messages", root
			}
			h := newHop(t, root, suffix)
			run := tc.run(t, strings.Replace(base, root, h.url, 1))

			var got []agenttest.Request
			for _, r := range up.Requests() {
				if !r.Summary && strings.HasSuffix(r.Path, suffix) {
					got = append(got, r)
				}
			}
			checkTaskDone(t, up.Problems(), got, run.stdout)
			sent, sentHeaders := h.Bodies(), h.Headers()
			if len(got) != len(sent) {
				t.Fatalf("the client sent %d requests, the upstream got %d", len(sent), len(got))
			}
			compacted := 0
			for i := range got {
				f, err := checkAgentForwarded(wire.ForPath(suffix), sent[i], got[i].Body)
				if err != nil {
					t.Errorf("request %d: %v", i, err)
				}
				if f.Compacted {
					compacted++
				}
				if sentHeaders[i].Get("Authorization")+sentHeaders[i].Get("X-Api-Key") == "" {
					t.Errorf("request %d: the client sent no key", i)
				}
				for _, k := range credentialHeaders {
					if got[i].Header.Get(k) != sentHeaders[i].Get(k) {
						t.Errorf("request %d: %s reached the upstream as %q, not as sent", i, k, got[i].Header.Get(k))
					}
				}
			}
			// The summaries, by the path they were asked on, and the key
			// that paid each.
			summaries := map[string]int{}
			for _, r := range append(openai.Requests(), anthropic.Requests()...) {
				if r.Summary {
					summaries[r.Path+" "+r.Header.Get("Authorization")+r.Header.Get("X-Api-Key")]++
				}
			}
			for _, r := range openai.Chat.Requests() {
				if r.Summary {
					summaries[r.Path+" "+r.Header.Get("Authorization")+r.Header.Get("X-Api-Key")]++
				}
			}
			t.Logf("%d requests, %d compacted; summaries: %v", len(got), compacted, summaries)
			if compacted == 0 {
				t.Error("no request reached the upstream compacted")
			}
			// With no key of its own, serve has each summary written
			// through the client's own API, at the client's upstream,
			// paid with the client's key, and sends it with the client's
			// API version.
			path, key := "/v1/responses", clientKey
			if tc.api == "messages" {
				path, key = "/v1/messages", anthropicKey
			}
			paid := path + " " + sentHeaders[0].Get("Authorization") + sentHeaders[0].Get("X-Api-Key")
			if !strings.Contains(paid, key) || summaries[paid] == 0 || len(summaries) != 1 {
				t.Errorf("summaries %v: want some, all of them %q, with the key %q", summaries, paid, key)
			}
			for _, r := range append(openai.Requests(), anthropic.Requests()...) {
				if r.Summary && len(sentHeaders) > 0 && r.Header.Get("Anthropic-Version") != sentHeaders[0].Get("Anthropic-Version") {
					t.Errorf("a summary went with anthropic-version %q, the client's is %q", r.Header.Get("Anthropic-Version"), sentHeaders[0].Get("Anthropic-Version"))
				}
			}
			if log := srv.stderr.String(); strings.Contains(log, clientKey) || strings.Contains(log, anthropicKey) {
				t.Error("serve's log shows the client's key")
			}
		})
	}
}
