package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// refusal reads an error answer in the shape of api: OpenAI's
// {"error": {"code", "message"}}, Anthropic's {"type": "error", "error":
// {"type", "message"}} whose message leads with the code.
func refusal(t *testing.T, api string, data []byte) (code, message string) {
	t.Helper()
	var e struct {
		Type  string
		Error struct{ Type, Code, Message string }
	}
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("answer %s: %v", data, err)
	}
	if api != openaitest.APIMessages {
		return e.Error.Code, e.Error.Message
	}
	if e.Type != "error" || e.Error.Type != "invalid_request_error" {
		t.Errorf("answer %s: not Anthropic's shape of an invalid request", data)
	}
	code, message, _ = strings.Cut(e.Error.Message, ": ")
	return code, message
}

// TestRefusedOnEveryAPI sends bodies abridge must refuse on each of the
// three APIs, and checks each is answered 400 in its API's error shape,
// naming what is wrong, and sent nowhere: a member named twice, at the
// top level (the history, the model, stream, the system prompt's field),
// inside a message, a part, a call or a field abridge does not read (a
// reader taking the first and one taking the last would see different
// requests); a string of invalid UTF-8, in the history or outside it; a
// Responses message whose content is neither a string nor an array of
// parts (issue 28, items 3, 5 and 6).
func TestRefusedOnEveryAPI(t *testing.T) {
	const (
		chat, responses, messages = openaitest.APIChat, openaitest.APIResponses, openaitest.APIMessages
		dup                       = middleware.CodeInvalidJSON
		bad                       = middleware.CodeInvalidMessage
	)
	tests := []struct {
		api, name, body string
		code, says      string
	}{
		{chat, "messages twice", `{"model":"m","messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`, dup, `duplicate object member name "messages"`},
		{chat, "model twice", `{"model":"a","model":"b","messages":[{"role":"user","content":"a"}]}`, dup, `"model"`},
		{chat, "stream twice", `{"stream":false,"messages":[{"role":"user","content":"a"}],"stream":true}`, dup, `"stream"`},
		{chat, "role twice in a message", `{"model":"m","messages":[{"role":"user","role":"system","content":"a"}]}`, dup, `"role" within "/messages/0"`},
		{chat, "text twice in a part", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`, dup, `"text" within "/messages/0/content/0"`},
		{chat, "name twice in a call", `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"x"}]}`, dup, `"name" within "/messages/1/tool_calls/0/function"`},
		{chat, "a member twice in a tool", `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":"f","name":"g"}}]}`, dup, `"name"`},
		{chat, "invalid UTF-8 in a message", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\xff\xfeb\"}]}", dup, "invalid UTF-8"},
		{chat, "invalid UTF-8 in the model", "{\"model\":\"m\xff\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}", dup, "invalid UTF-8"},
		{chat, "invalid UTF-8 in a tool", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\xfe\"}}]}", dup, "invalid UTF-8"},
		{chat, "invalid UTF-8 in a name", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\",\"x\xff\":1}]}", dup, "invalid UTF-8"},

		{responses, "input twice", `{"model":"m","input":[{"role":"user","content":"a"}],"input":"b"}`, dup, `duplicate object member name "input"`},
		{responses, "instructions twice", `{"model":"m","instructions":"a","instructions":"b","input":"c"}`, dup, `"instructions"`},
		{responses, "model twice", `{"model":"a","model":"b","input":"c"}`, dup, `"model"`},
		{responses, "stream twice", `{"model":"m","stream":true,"input":"c","stream":false}`, dup, `"stream"`},
		{responses, "role twice in an item", `{"model":"m","input":[{"role":"assistant","role":"user","content":"a"}]}`, dup, `"role" within "/input/0"`},
		{responses, "text twice in a part", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}]}`, dup, `"text" within "/input/0/content/0"`},
		{responses, "call_id twice in a call", `{"model":"m","input":[{"role":"user","content":"go"},{"type":"function_call","call_id":"c","call_id":"d","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}]}`, dup, `"call_id" within "/input/1"`},
		{responses, "invalid UTF-8 in an item", "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":\"a\xff\xfeb\"}]}", dup, "invalid UTF-8"},
		{responses, "invalid UTF-8 in the instructions", "{\"model\":\"m\",\"instructions\":\"\xc3\",\"input\":\"a\"}", dup, "invalid UTF-8"},
		{responses, "a number as content", `{"model":"m","input":[{"role":"user","content":12345}]}`, bad, "input item 0: content is a number, not a string or an array"},
		{responses, "an object as content", `{"model":"m","input":[{"role":"user","content":{"weird":1}}]}`, bad, "input item 0: content is an object"},
		{responses, "an object as content, no role", `{"model":"m","input":[{"content":{"weird":1}}]}`, bad, "input item 0"},
		{responses, "null as content", `{"model":"m","input":[{"role":"developer","content":null}]}`, bad, "input item 0: content is null"},
		{responses, "no content", `{"model":"m","input":[{"type":"message","role":"user"}]}`, bad, "input item 0: no content"},
		{responses, "a number as a part", `{"model":"m","input":[{"role":"user","content":[1]}]}`, bad, "input item 0: content part 0 is a number, not an object"},
		{responses, "a number as an answer's content", `{"model":"m","input":[{"role":"user","content":"a"},{"role":"assistant","content":5},{"role":"user","content":"b"}]}`, bad, "input item 1: content is a number"},

		{messages, "messages twice", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`, dup, `duplicate object member name "messages"`},
		{messages, "system twice", `{"model":"m","max_tokens":5,"system":"a","system":"b","messages":[{"role":"user","content":"c"}]}`, dup, `"system"`},
		{messages, "model twice", `{"model":"a","model":"b","max_tokens":5,"messages":[{"role":"user","content":"c"}]}`, dup, `"model"`},
		{messages, "stream twice", `{"model":"m","stream":true,"stream":true,"max_tokens":5,"messages":[{"role":"user","content":"c"}]}`, dup, `"stream"`},
		{messages, "role twice in a message", `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","role":"user","content":"a"}]}`, dup, `"role" within "/messages/0"`},
		{messages, "text twice in a block", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`, dup, `"text" within "/messages/0/content/0"`},
		{messages, "a key twice in a call's input", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1,"a":2}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`, dup, `"a" within "/messages/1/content/0/input"`},
		{messages, "invalid UTF-8 in a block", "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\xff\xfeb\"}]}]}", dup, "invalid UTF-8"},
		{messages, "invalid UTF-8 in the system prompt", "{\"model\":\"m\",\"max_tokens\":5,\"system\":\"\xff\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}", dup, "invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.api+"/"+tt.name, func(t *testing.T) {
			code, message := postRefused(t, tt.api, tt.body)
			if code != tt.code || !strings.Contains(message, tt.says) {
				t.Errorf("error %q %q, want code %s, saying %q", code, message, tt.code, tt.says)
			}
		})
	}
}

// postRefused posts body to a proxy's path of api and checks it is
// answered 400 and sent nowhere; it returns the error's code and message.
func postRefused(t *testing.T, api, body string) (code, message string) {
	t.Helper()
	up := &openaitest.Upstream{}
	base := bodyProxy(t, up, proxy.Options{})
	resp, err := http.Post(base+"/v1"+openaitest.APIPath(api), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d (%s), want 400", resp.StatusCode, data)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
	return refusal(t, api, data)
}

// TestPositionsAsSent checks that a history refused is refused naming
// the position at fault as the client's own body has it, on every API: the
// index in Chat's and Anthropic's "messages" (Anthropic's system prompt,
// a field of its own, is not message 0) and in Responses' "input", where
// several items make one message of abridge's (issue 28, item 7).
func TestPositionsAsSent(t *testing.T) {
	const (
		chat, responses, messages = openaitest.APIChat, openaitest.APIResponses, openaitest.APIMessages
	)
	tests := []struct {
		api, name, body, says string
	}{
		{chat, "an orphan tool message", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"go"},{"role":"tool","tool_call_id":"c9","content":"x"}]}`,
			`message 2: return for call "c9"`},
		{chat, "an unanswered call", `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"user","content":"and?"}]}`,
			`message 1: call "c1" (ls) not answered`},
		{messages, "an orphan tool_result after a system prompt", `{"model":"m","max_tokens":5,"system":"s","messages":[{"role":"user","content":"go"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"see"},{"type":"tool_result","tool_use_id":"t9","content":"x"}]}]}`,
			`message 2 block 1: return for call "t9"`},
		{messages, "an unanswered tool_use", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"text","text":"let me see"},{"type":"tool_use","id":"t1","name":"ls","input":{}}]},{"role":"user","content":"and?"}]}`,
			`message 1 block 1: call "t1" (ls) not answered`},
		{messages, "the first message the assistant's", `{"model":"m","max_tokens":5,"system":"s","messages":[{"role":"assistant","content":"hi"},{"role":"user","content":"go"}]}`,
			"message 0: first message not from the user"},
		{messages, "two answers in a row", `{"model":"m","max_tokens":5,"system":"s","messages":[{"role":"user","content":"go"},{"role":"assistant","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"go"}]}`,
			"message 2: user and assistant messages do not alternate"},
		{responses, "an orphan output after instructions", `{"model":"m","instructions":"s","input":[{"role":"user","content":"go"},{"role":"assistant","content":"ok"},{"type":"function_call_output","call_id":"c9","output":"x"}]}`,
			`input item 2: return for call "c9"`},
		{responses, "an unanswered call after a reasoning item", `{"model":"m","input":[{"role":"user","content":"go"},{"type":"reasoning","summary":[],"encrypted_content":"e"},{"type":"function_call","call_id":"c1","name":"ls","arguments":"{}"},{"role":"user","content":"and?"}]}`,
			`input item 2: call "c1" (ls) not answered`},
		{responses, "a lone reasoning item", `{"model":"m","instructions":"s","input":[{"role":"user","content":"go"},{"role":"assistant","content":"ok"},{"type":"reasoning","summary":[],"encrypted_content":"e"},{"role":"user","content":"and?"}]}`,
			"input item 2: reasoning item without the item it precedes"},
	}
	for _, tt := range tests {
		t.Run(tt.api+"/"+tt.name, func(t *testing.T) {
			code, message := postRefused(t, tt.api, tt.body)
			if code != middleware.CodeInvalidHistory || !strings.Contains(message, tt.says) {
				t.Errorf("error %q %q, want code %s, saying %q", code, message, middleware.CodeInvalidHistory, tt.says)
			}
		})
	}
}

// TestTooLargeNamesTheLimit checks that a body over the proxy's limit is
// answered 413 in its API's shape naming the limit and the setting that
// raises it, ABRIDGE_SERVE_MAX_BODY_MB, whether its length is declared or
// it comes chunked, on every API (issue 28, item 12).
func TestTooLargeNamesTheLimit(t *testing.T) {
	for _, api := range []string{openaitest.APIChat, openaitest.APIResponses, openaitest.APIMessages} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/chunked=%v", api, chunked), func(t *testing.T) {
				up := &openaitest.Upstream{}
				base := bodyProxy(t, up, proxy.Options{MaxBodyBytes: 2 << 20})
				body := `{"model":"m","max_tokens":5,"input":"x","messages":[{"role":"user","content":"` + strings.Repeat("x", 3<<20) + `"}]}`
				var r io.Reader = strings.NewReader(body)
				if chunked {
					r = io.MultiReader(r) // no length known: sent chunked
				}
				resp, err := http.Post(base+"/v1"+openaitest.APIPath(api), "application/json", r)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Fatalf("status %d (%s), want 413", resp.StatusCode, data)
				}
				var e struct {
					Type  string
					Error struct{ Type, Code, Message string }
				}
				if err := json.Unmarshal(data, &e); err != nil {
					t.Fatalf("answer %s: %v", data, err)
				}
				want := "request body larger than 2097152 bytes (2.0 MiB), the proxy's limit: raise ABRIDGE_SERVE_MAX_BODY_MB"
				shaped := e.Error.Code == proxy.CodeTooLarge
				if api == openaitest.APIMessages {
					shaped = e.Type == "error" && e.Error.Type == "request_too_large" && strings.HasPrefix(e.Error.Message, proxy.CodeTooLarge+": ")
				}
				if !shaped || !strings.Contains(e.Error.Message, want) {
					t.Errorf("answer %s: want %s in the API's shape, saying %q", data, proxy.CodeTooLarge, want)
				}
				if n := len(up.Requests()); n != 0 {
					t.Errorf("upstream got %d requests, want none", n)
				}
			})
		}
	}
}

// rss returns the process's resident set size, from /proc/self/status
// (0 where there is none).
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestMemoryBudgetHolds is issue 28's item 4 under load: eight bodies of
// 1,000,001 one-letter messages (30.5 MiB each) sent at once to a proxy
// with the default limits (32 MiB a body, a 256 MiB budget), each client
// sending again after a 503 as its Retry-After says. Each ends answered
// 413 naming ABRIDGE_SERVE_BODY_MEMORY_MB (its processing, about 5 GB,
// would not fit in the budget), and none is decoded. The live heap (what
// a collection, forced every 50 ms during the run, found live:
// runtime/metrics' /gc/heap/live:bytes) stays within the budget over the
// baseline, the clients' body counted in the baseline; the peaks of the
// heap between collections (HeapAlloc) and of the RSS are logged.
func TestMemoryBudgetHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 244 MiB or more through a proxy")
	}
	var b bytes.Buffer
	b.WriteString(`{"model":"m","messages":[`)
	for i := range 1_000_001 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role": "user","content": "a"}`)
	}
	b.WriteString("]}")
	body := b.Bytes()
	up := &openaitest.Upstream{}
	base := bodyProxy(t, up, proxy.Options{})

	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtime.GC()
	metrics.Read(live)
	baseline, baseRSS := live[0].Value.Uint64(), rss()
	var peakLive, peakHeap, peakRSS uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peakHeap, peakRSS = max(peakHeap, ms.HeapAlloc), max(peakRSS, rss())
			runtime.GC()
			metrics.Read(live)
			peakLive = max(peakLive, live[0].Value.Uint64())
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	busy := 0
	for range 8 {
		wg.Go(func() {
			for until := time.Now().Add(3 * time.Minute); time.Now().Before(until); {
				resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				code, message := refusal(t, openaitest.APIChat, data)
				if resp.StatusCode == http.StatusServiceUnavailable && code == proxy.CodeBusy && resp.Header.Get("Retry-After") == "1" {
					mu.Lock()
					busy++
					mu.Unlock()
					time.Sleep(time.Second)
					continue
				}
				if resp.StatusCode != http.StatusRequestEntityTooLarge || code != proxy.CodeTooLarge || !strings.Contains(message, "ABRIDGE_SERVE_BODY_MEMORY_MB") {
					t.Errorf("status %d, error %q %q; want 413 %s naming ABRIDGE_SERVE_BODY_MEMORY_MB", resp.StatusCode, code, message, proxy.CodeTooLarge)
				}
				return
			}
			t.Error("still busy after 3 minutes")
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	const budget = proxy.DefaultBodyMemory
	t.Logf("%d answers 503 first; baseline: heap %d MiB, RSS %d MiB; peaks: live heap %d MiB, heap %d MiB, RSS %d MiB",
		busy, baseline>>20, baseRSS>>20, peakLive>>20, peakHeap>>20, peakRSS>>20)
	if peakLive > baseline+budget {
		t.Errorf("live heap peaked at %d MiB, over the %d MiB baseline and the %d MiB budget", peakLive>>20, baseline>>20, budget>>20)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
}

// TestBudgetFreedBeforeTheWait checks that a request gives back what
// processing alone took of the memory budget before it waits for the
// upstream, keeping only what it holds while it waits: eight requests of
// 2,000 one-letter messages (processing estimated at 10 MiB each, 0.8 MiB
// of it held while waiting) in flight at once, each sent once the
// previous one reached an upstream that answers after 2 s, all fit in a
// 32 MiB budget. Holding the whole estimate until the answer, the fourth
// was answered 503.
func TestBudgetFreedBeforeTheWait(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[`)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":"%c"}`, 'a'+i%26)
	}
	b.WriteString("]}")
	body := b.String()
	up := &openaitest.Upstream{Latency: 2 * time.Second}
	base := bodyProxy(t, up, proxy.Options{MaxBodyBytes: 1 << 20, BodyMemory: 32 << 20})
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
			if resp.StatusCode != http.StatusOK {
				t.Logf("request %d: %d %s", i, resp.StatusCode, data)
			}
		})
		// The next once this one is at the upstream (or answered).
		for len(up.Requests()) <= i {
			select {
			case <-done:
			case <-time.After(5 * time.Millisecond):
				continue
			}
			break
		}
	}
	wg.Wait()
	want := []int{200, 200, 200, 200, 200, 200, 200, 200}
	if diff := cmp.Diff(want, statuses); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}
