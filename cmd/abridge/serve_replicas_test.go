package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/testkit/openaitest"
	"github.com/abridge-go/abridge/testkit/pgtest"
)

// postgresDatabase creates a fresh database on the test's PostgreSQL
// server, dropped when the test ends, and returns its URL; it skips the
// test (fails it under CI=true) without a server (see pgtest.Server).
func postgresDatabase(t *testing.T) string {
	t.Helper()
	return pgtest.Database(t, pgtest.Server(t, "cmd/abridge", "the replica tests"), "")
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// abridgeBinary builds the abridge command once per test run.
func abridgeBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "abridge-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "abridge")
		out, err := exec.Command("go", "build", "-o", buildOnce.path, ".").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

// replica is an abridge serve process.
type replica struct {
	name   string
	cmd    *exec.Cmd
	base   string
	client *http.Client
	mu     sync.Mutex
	log    bytes.Buffer
	exited chan error
}

// startReplica starts abridge serve as a process of its own, its upstream
// upstream/NAME/v1 (so the upstream knows which replica a request comes
// from), its summaries in the database dsn, with the environment's
// variables env (NAME=VALUE) added; without ABRIDGE_AHEAD among them, it
// writes each summary when its compaction is due.
func startReplica(t *testing.T, name, upstream, dsn string, env ...string) *replica {
	t.Helper()
	r := &replica{name: name, exited: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}}
	r.cmd = exec.Command(abridgeBinary(t), "serve", "--addr", "127.0.0.1:0")
	r.cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+upstream+"/"+name+"/v1", "OPENAI_API_KEY=",
		"ABRIDGE_SUMMARY_API_KEY=", "ABRIDGE_SESSION_DB="+dsn, "ABRIDGE_LOG_LEVEL=info", "ABRIDGE_LOG_FORMAT=json", "ABRIDGE_AHEAD=-1")
	r.cmd.Env = append(r.cmd.Env, env...)
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			r.log.WriteString(line + "\n")
			r.mu.Unlock()
			if m := servingLine.FindStringSubmatch(line); m != nil {
				ready <- m[1]
			}
		}
		r.exited <- r.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		if t.Failed() {
			lines := strings.SplitAfter(r.logText(), "\n")
			t.Logf("replica %s's log, its last lines:\n%s", name, strings.Join(lines[max(0, len(lines)-20):], ""))
		}
	})
	select {
	case r.base = <-ready:
	case err := <-r.exited:
		t.Fatalf("replica %s exited: %v\n%s", name, err, r.logText())
	case <-time.After(time.Minute):
		t.Fatalf("replica %s did not start:\n%s", name, r.logText())
	}
	return r
}

func (r *replica) logText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// post sends one chat completions request.
func (r *replica) post(body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, r.base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// conversationBodies returns the request bodies of a client replaying msgs
// with its full history.
func conversationBodies(msgs []json.RawMessage) [][]byte {
	var out [][]byte
	for _, n := range openaitest.RequestLengths(msgs) {
		var b bytes.Buffer
		b.WriteString(`{"model":"gpt-test","messages":[`)
		for i, m := range msgs[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(m)
		}
		b.WriteString(`],"temperature":0,"user":"replica-test"}`)
		out = append(out, b.Bytes())
	}
	return out
}

// upstreamRun is what the upstream saw of one run of the conversation.
type upstreamRun struct {
	forwarded [][]byte // the chat requests' bodies, in order
	summaries int
	// summaryAt lists the requests (indexes) during which a summary was
	// asked for.
	summaryAt []int
}

// TestServeReplicas runs one conversation (120 messages, a tool-using
// agent's) through abridge serve processes on one PostgreSQL database:
//
//   - one replica: the baseline;
//   - two replicas, the requests alternating between them: the summarizer
//     is called as many times as with one, and the upstream receives the
//     very same requests;
//   - two replicas, and the one serving a request is killed (SIGKILL)
//     while its summary is being written: the client sends the request to
//     the other, which answers it, and carries the conversation on; the
//     upstream receives the same requests as with one replica, and the
//     summarizer is called once more than with one, for the summary the
//     killed replica never saved.
//
// Then the surviving replica stops on SIGTERM and exits 0.
func TestServeReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts abridge serve processes: skipped with -short")
	}
	dsns := []string{postgresDatabase(t), postgresDatabase(t), postgresDatabase(t)}
	bodies := conversationBodies(openaitest.ToolConversation(120, "the replica test"))
	trim := trimtools.New(trimtools.Options{})

	// run replays the conversation through the replicas; route picks the
	// replica of request i. A request whose replica fails is sent to the
	// next one.
	run := func(t *testing.T, up *openaitest.Upstream, replicas []*replica, route func(i int) int) upstreamRun {
		t.Helper()
		var res upstreamRun
		for i, body := range bodies {
			_, before := up.Counts()
			k := route(i)
			status, data, err := replicas[k].post(body)
			if err != nil {
				t.Logf("request %d: replica %s failed (%v): sending it to the next replica", i, replicas[k].name, err)
				status, data, err = replicas[(k+1)%len(replicas)].post(body)
			}
			if err != nil || status != 200 {
				t.Fatalf("request %d: %d %s %v", i, status, data, err)
			}
			if _, after := up.Counts(); after > before {
				res.summaryAt = append(res.summaryAt, i)
			}
		}
		for _, r := range up.Chats() {
			res.forwarded = append(res.forwarded, r.Body)
		}
		_, res.summaries = up.Counts()
		if len(res.forwarded) != len(bodies) {
			t.Fatalf("upstream got %d requests, want %d", len(res.forwarded), len(bodies))
		}
		compacted := 0
		for i, got := range res.forwarded {
			f, err := openaitest.CheckForwarded(bodies[i], got, trim)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
			}
			if f.Compacted {
				compacted++
			}
		}
		if compacted == 0 {
			t.Errorf("no request was compacted")
		}
		return res
	}
	sameRequests := func(t *testing.T, want, got upstreamRun) {
		t.Helper()
		var differ []int
		for i := range want.forwarded {
			if !bytes.Equal(want.forwarded[i], got.forwarded[i]) {
				differ = append(differ, i)
			}
		}
		if len(differ) > 0 {
			t.Errorf("%d requests reached the upstream otherwise than with one replica: %v", len(differ), differ)
		}
	}

	newUpstream := func(t *testing.T, up *openaitest.Upstream) string {
		srv := httptest.NewServer(up)
		t.Cleanup(srv.Close)
		return srv.URL
	}

	up1 := &openaitest.Upstream{}
	u1 := newUpstream(t, up1)
	one := run(t, up1, []*replica{startReplica(t, "a", u1, dsns[0])}, func(int) int { return 0 })
	t.Logf("one replica: %d requests, %d summaries (during requests %v)", len(bodies), one.summaries, one.summaryAt)
	if one.summaries < 2 {
		t.Fatalf("%d summaries with one replica: the conversation should need at least 2", one.summaries)
	}

	t.Run("alternating", func(t *testing.T) {
		up := &openaitest.Upstream{}
		u := newUpstream(t, up)
		two := run(t, up, []*replica{startReplica(t, "a", u, dsns[1]), startReplica(t, "b", u, dsns[1])},
			func(i int) int { return i % 2 })
		if two.summaries != one.summaries {
			// A replica that applies a span it verified itself rather than
			// the newer one the other replica saved compacts again: see
			// window's find, whose verified-span shortcut must not skip a
			// more recent span.
			t.Errorf("%d summaries with two replicas, %d with one", two.summaries, one.summaries)
		}
		if diff := cmp.Diff(one.summaryAt, two.summaryAt); diff != "" {
			t.Errorf("requests that needed a summary (-one replica +two):\n%s", diff)
		}
		sameRequests(t, one, two)
	})

	t.Run("kill -9 mid-request", func(t *testing.T) {
		// The replica a is killed while it writes the second summary of
		// the conversation.
		victim := one.summaryAt[1]
		arrived := make(chan struct{})
		var armed atomic.Bool // set while the victim request is sent
		up := &openaitest.Upstream{}
		up.Hook = func(w http.ResponseWriter, r *http.Request, req openaitest.Request) bool {
			if !req.Summary || !strings.HasPrefix(req.Path, "/a/") || !armed.CompareAndSwap(true, false) {
				return false
			}
			close(arrived)
			<-r.Context().Done() // until the replica dies
			return true
		}
		u := newUpstream(t, up)
		a, b := startReplica(t, "a", u, dsns[2]), startReplica(t, "b", u, dsns[2])
		go func() {
			<-arrived
			_ = a.cmd.Process.Signal(syscall.SIGKILL)
		}()
		killed := run(t, up, []*replica{a, b}, func(i int) int {
			switch {
			case i == victim:
				armed.Store(true)
				return 0
			case i > victim:
				return 1 // a is dead
			}
			return i % 2
		})
		select {
		case <-arrived:
		default:
			t.Fatal("replica a never asked for the second summary")
		}
		if err := <-a.exited; err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("replica a: %v, want killed", err)
		}
		// One summary more: the one a was writing when it died, written
		// again by b. Nothing else was asked again.
		if killed.summaries != one.summaries+1 {
			t.Errorf("%d summaries, want %d (one replica's %d, and the one a never finished)", killed.summaries, one.summaries+1, one.summaries)
		}
		sameRequests(t, one, killed)

		// b stops on SIGTERM, exiting 0.
		if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-b.exited:
			if err != nil {
				t.Errorf("replica b after SIGTERM: %v, want exit 0", err)
			}
		case <-time.After(time.Minute):
			t.Error("replica b did not stop on SIGTERM")
		}
		if strings.Contains(a.logText()+b.logText(), clientKey) {
			t.Error("a replica's log shows the client's key")
		}
	})
}
