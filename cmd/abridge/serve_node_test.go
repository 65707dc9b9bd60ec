package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/testkit/openaitest"
	"github.com/abridge-go/abridge/testkit/skipnote"
)

// nodeClientDir holds the npm package of the Node client test; .ci/run
// installs it with npm ci.
const nodeClientDir = "testdata/npm"

// needNode returns the node binary, or skips the test (fails it under
// CI=true) when node or the openai npm package is missing.
func needNode(t *testing.T) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		skipnote.Say("cmd/abridge: " + fmt.Sprintf(format, args...))
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH: skipping the openai npm client test")
	}
	if _, err := os.Stat(filepath.Join(nodeClientDir, "node_modules", "openai", "package.json")); err != nil {
		missing("the openai npm package is not installed: run npm ci --prefix cmd/abridge/%s", nodeClientDir)
	}
	return node
}

// TestServeNodeClient replays the 120-message tool-using conversation with
// the official openai npm package against abridge serve in front of a fake
// upstream: every request, streamed or not, reaches the upstream valid,
// byte-identical outside "messages" to what the Node client sent, and
// compacted (head, one marker, tail) once past the window's trigger; a
// broken history comes back to the client as a BadRequestError with
// abridge's code, and reaches nobody.
func TestServeNodeClient(t *testing.T) {
	node := needNode(t)
	path, msgs := openaitest.SharedConversation(t, 120)
	up := &openaitest.Upstream{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	srv := startServe(t, serveEnv(t, upSrv.URL))

	// A recording hop between the client and serve keeps the bodies as
	// the Node client wrote them.
	tap := newHop(t, strings.TrimSuffix(srv.base, "/v1"), "/chat/completions")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "replay.mjs")
	cmd.Dir = nodeClientDir
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+tap.url+"/v1", "OPENAI_API_KEY="+clientKey,
		"TRANSCRIPT="+path, "MESSAGES=120")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node replay.mjs: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var report struct {
		Requests, Streamed int
		Rejected           struct {
			Status  int
			Code    string
			Message string
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("node's report %q: %v", stdout.String(), err)
	}
	lengths := openaitest.RequestLengths(msgs)
	if report.Requests != len(lengths) || report.Streamed != len(lengths)/2 {
		t.Errorf("node sent %d requests, %d streamed; want %d, %d", report.Requests, report.Streamed, len(lengths), len(lengths)/2)
	}
	if report.Rejected.Status != 400 || report.Rejected.Code != middleware.CodeInvalidHistory || !strings.Contains(report.Rejected.Message, "call_9") {
		t.Errorf("broken history: %+v; want a 400 %s naming call_9", report.Rejected, middleware.CodeInvalidHistory)
	}

	chats := up.Chats()
	sent := tap.Bodies()
	// The tap saw the broken request too; the upstream did not.
	if len(chats) != len(lengths) || len(sent) != len(lengths)+1 {
		t.Fatalf("upstream got %d requests, the client sent %d; want %d and %d", len(chats), len(sent), len(lengths), len(lengths)+1)
	}
	trim := trimtools.New(trimtools.Options{})
	compacted, streamed := 0, 0
	for i, got := range chats {
		f, err := openaitest.CheckForwarded(sent[i], got.Body, trim)
		if err != nil {
			t.Errorf("request %d (%d messages): %v", i, lengths[i], err)
		}
		if f.Compacted {
			compacted++
		}
		if got.Stream {
			streamed++
		}
		if got.Header.Get("Authorization") != "Bearer "+clientKey {
			t.Errorf("request %d: the client's Authorization was not forwarded", i)
		}
	}
	t.Logf("%d requests from the openai npm client (%d streamed), %d compacted", len(chats), streamed, compacted)
	if compacted == 0 {
		t.Error("no request was compacted")
	}
	if strings.Contains(srv.stderr.String(), clientKey) {
		t.Error("serve's log shows the client's key")
	}
}
