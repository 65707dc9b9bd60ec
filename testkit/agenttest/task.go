// Package agenttest holds scripted fake upstreams of the OpenAI Responses
// API and of Anthropic Messages for the tests that run real agents (Codex
// CLI, Claude Code) and the official npm clients: each speaks its API's
// real wire format, JSON and SSE, and plays a model working through a
// Task, one shell command per tool round, whatever the client sends in
// between. Each records the requests it received and the problems it saw
// in them: a tool output with no call, a tool output without the file's
// contents, or encrypted reasoning or a thinking signature that came back
// changed.
package agenttest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Task is the scripted task: the model asks for Parts files to be shown,
// one shell command (cat) per tool round, checks that each tool output
// holds the file's first line, and then gives the Final answer.
type Task struct {
	// Parts is the number of files, and of tool rounds.
	Parts int
	// PartBytes is the size of each file, about.
	PartBytes int
}

// File is the name of part i (from 1).
func (t Task) File(i int) string { return fmt.Sprintf("part_%02d.txt", i) }

// Marker is the first line of part i, which its tool output must show.
func (t Task) Marker(i int) string { return fmt.Sprintf("PART %02d BEGIN", i) }

// Command is the shell command of round i.
func (t Task) Command(i int) string { return "cat " + t.File(i) }

// Final is the model's answer once every part was shown.
func (t Task) Final() string {
	return fmt.Sprintf("TASK COMPLETE: read all %d parts.", t.Parts)
}

// Content is the text of part i.
func (t Task) Content(i int) string {
	var b strings.Builder
	b.WriteString(t.Marker(i) + "\n")
	for n := 1; b.Len() < t.PartBytes; n++ {
		fmt.Fprintf(&b, "part %02d line %04d: the quick brown fox jumps over the lazy dog, checksum %08x\n", i, n, n*7919+i)
	}
	fmt.Fprintf(&b, "PART %02d END\n", i)
	return b.String()
}

// WriteFiles writes every part into dir.
func (t Task) WriteFiles(dir string) error {
	for i := 1; i <= t.Parts; i++ {
		if err := os.WriteFile(filepath.Join(dir, t.File(i)), []byte(t.Content(i)), 0o644); err != nil {
			return fmt.Errorf("write part %d: %w", i, err)
		}
	}
	return nil
}

// Request is one request a fake upstream received.
type Request struct {
	// Method and Path are the request's; Path has no query.
	Method, Path string
	// Header is the request's header.
	Header http.Header
	// Body is the request's body as it arrived.
	Body []byte
	// Stream is set when the body asked for a stream.
	Stream bool
	// Summary is set for a summarizer's request (its instructions are
	// llm.Instructions).
	Summary bool
	// Step is the tool round the answer asked for (from 1), or Parts+1
	// for the final answer; 0 for a summary or a request off the task.
	Step int
}

// recorder keeps what a fake received and the problems it saw.
type recorder struct {
	mu       sync.Mutex
	requests []Request
	problems []string
}

// Requests returns the requests received so far, in order.
func (r *recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// Problems returns what was wrong in the requests received so far, one
// line each naming the request (from 0).
func (r *recorder) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.problems...)
}

// add records req and returns its index.
func (r *recorder) add(req Request) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req)
	return len(r.requests) - 1
}

func (r *recorder) problem(i int, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf("request %d: ", i)+fmt.Sprintf(format, args...))
}

// summaryText is the answer to a summarizer's request: the same for the
// same request.
func summaryText(body []byte) string {
	h := fnv.New64a()
	h.Write(body)
	return fmt.Sprintf("Goal: read every part file. Status: in progress (summary %016x). Next step: read the next part.", h.Sum64())
}

// opaque is a deterministic stand-in for what a provider encrypts or
// signs: base64 of about n bytes derived from seed.
func opaque(seed string, n int) string {
	var b []byte
	h := fnv.New64a()
	for len(b) < n {
		h.Write([]byte(seed))
		b = h.Sum(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// tool is a tool a client declared, in either API's shape.
type tool struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Parameters  schema `json:"parameters"`
	InputSchema schema `json:"input_schema"`
}

type schema struct {
	Properties map[string]json.RawMessage `json:"properties"`
}

// commandCall returns the name and the JSON arguments of a call running
// command with the client's shell tool: Codex's exec_command, Claude
// Code's Bash, or the first tool taking a "cmd" or "command"; ok is false
// when the client declared none.
func commandCall(tools []tool, command, description string) (name string, args []byte, ok bool) {
	pick := -1
	for _, want := range []string{"exec_command", "Bash", "shell"} {
		for i, t := range tools {
			if t.Name == want && pick < 0 {
				pick = i
			}
		}
	}
	for i, t := range tools {
		if pick >= 0 {
			break
		}
		if t.Parameters.Properties["cmd"] != nil || t.Parameters.Properties["command"] != nil || t.InputSchema.Properties["command"] != nil {
			pick = i
		}
	}
	if pick < 0 {
		return "", nil, false
	}
	t := tools[pick]
	props := t.Parameters.Properties
	if props == nil {
		props = t.InputSchema.Properties
	}
	in := map[string]string{}
	if props["cmd"] != nil {
		in["cmd"] = command
	} else {
		in["command"] = command
	}
	if props["description"] != nil {
		in["description"] = description
	}
	args, _ = json.Marshal(in)
	return t.Name, args, true
}

// nextStep returns the round that follows a tool output with the given
// call ID and text: the round after the one whose ID it names, once the
// output is checked to hold that part's marker. Without a tool output
// (callID "") the task starts at round 1.
func (t Task) nextStep(callID, prefix, output string) (int, error) {
	if callID == "" {
		return 1, nil
	}
	var i int
	if _, err := fmt.Sscanf(callID, prefix+"%d", &i); err != nil || i < 1 || i > t.Parts {
		return 0, fmt.Errorf("the last tool output answers %q, a call the model did not make", callID)
	}
	if !strings.Contains(output, t.Marker(i)) {
		return 0, fmt.Errorf("the output of %s does not show %q: %.200q", callID, t.Marker(i), output)
	}
	return i + 1, nil
}
