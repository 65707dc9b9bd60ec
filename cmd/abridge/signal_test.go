package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// runMainEnv, set in a process's environment, makes the test binary run
// main instead of the tests: TestChatSignals starts abridge that way to
// send it real signals.
const runMainEnv = "ABRIDGE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestChatSignals runs abridge chat as a process and signals it while the
// model answers its second prompt. An interrupt cancels that turn only: the
// chat answers the third prompt, and a second interrupt, at the prompt,
// ends it. SIGTERM ends the chat at once. Either way it exits with 0.
func TestChatSignals(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no signals to send on Windows")
	}
	tests := []struct {
		name       string
		sig        os.Signal
		wantTurns  int    // turn requests the server receives
		wantStderr string // all of it
	}{
		{"interrupt", os.Interrupt, 3, "abridge: turn interrupted\n"},
		{"terminate", syscall.SIGTERM, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeOpenAI(t)
			held := make(chan struct{})
			f.intercept = func(_ http.ResponseWriter, r *http.Request, req chatRequest) bool {
				if req.text(len(req.Messages)-1) != "two" {
					return false
				}
				held <- struct{}{}
				<-r.Context().Done() // until the client gives the request up
				return true
			}
			cmd := exec.Command(os.Args[0], "chat")
			cmd.Env = []string{runMainEnv + "=1", "OPENAI_BASE_URL=" + f.srv.URL, "OPENAI_API_KEY=test",
				"GOCOVERDIR=" + t.TempDir()} // a binary built with -cover warns without it
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdoutPipe, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			stdout := bufio.NewReader(stdoutPipe)
			// answer sends prompt and reads the answer's line: once it has
			// been read, the chat has its signal handlers in place and is
			// back waiting for input.
			answer := func(prompt string) {
				t.Helper()
				io.WriteString(stdin, prompt+"\n")
				line, err := stdout.ReadString('\n')
				if want := "reply to: " + prompt + "\n"; line != want {
					t.Fatalf("read %q (%v), want %q; stderr:\n%s", line, err, want, stderr.String())
				}
			}
			answer("one")
			io.WriteString(stdin, "two\n")
			<-held
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			if tt.sig == os.Interrupt {
				answer("three")
				if err := cmd.Process.Signal(os.Interrupt); err != nil {
					t.Fatal(err)
				}
			}
			rest, _ := io.ReadAll(stdout)
			if err := cmd.Wait(); err != nil {
				t.Errorf("abridge chat: %v, want exit 0; stderr:\n%s", err, stderr.String())
			}
			if len(rest) != 0 {
				t.Errorf("stdout after the last answer: %q, want nothing", rest)
			}
			if got := stderr.String(); got != tt.wantStderr {
				t.Errorf("stderr = %q, want %q", got, tt.wantStderr)
			}
			if n := len(f.Requests()); n != tt.wantTurns {
				t.Errorf("the server received %d requests, want %d", n, tt.wantTurns)
			}
		})
	}
}
