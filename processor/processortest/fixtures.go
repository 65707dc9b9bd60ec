package processortest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// Fixture is a named valid history that [Run] checks processors on.
type Fixture struct {
	// Name names the fixture in subtest names.
	Name string
	// History is the history; it ends with a request.
	History []processor.Message
}

// Fixtures returns the built-in histories, freshly built (callers may keep
// or modify them): a single user request, a short chat, a long tool loop
// with many calls and outputs of several thousand characters, parallel
// tool calls answered out of order and across requests, structured JSON
// tool returns, multi-part user and tool content, unicode throughout, and
// a few [RandomHistory] histories of different sizes.
func Fixtures() []Fixture {
	fs := []Fixture{
		{"single-message", []processor.Message{processor.UserMessage("Hello!")}},
		{"short", short()},
		{"long-tool-loop", longToolLoop()},
		{"parallel-tool-calls", parallelCalls()},
		{"json-tool-returns", jsonReturns()},
		{"multi-part", multiPart()},
		{"unicode", unicode()},
		{"opaque-items", opaqueItems()},
	}
	for i, n := range []int{12, 60, 200} {
		r := rand.New(rand.NewPCG(uint64(i)+1, 0xab1d9e))
		fs = append(fs, Fixture{fmt.Sprintf("random-%d", n), RandomHistory(r, n)})
	}
	return fs
}

// OneEdit returns the shortest coding turn, freshly built: the user asks
// for a change to a file, the assistant edits it (a tool call answered by
// its return) and says it is done. The examples of the summary format and
// the summarizers read it.
func OneEdit() []processor.Message {
	return []processor.Message{
		processor.UserMessage("Add a --verbose flag to cmd/tool/main.go."),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "Edit", Args: `{"file_path":"cmd/tool/main.go","old_string":"a","new_string":"b"}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "Edit", Content: "ok"}),
		processor.TextMessage("Added the flag."),
	}
}

// CodingSession returns a short coding session that ends with the agent's
// answer, freshly built: a task naming a file, the file read and edited,
// and a test run that fails, each a tool call answered by its return. It
// holds what a summary of a session keeps: the files read and written,
// the command run and the error it printed.
func CodingSession() []processor.Message {
	step := func(id, tool, args, content string) []processor.Message {
		return []processor.Message{
			processor.NewResponse(call(id, tool, args)),
			processor.NewRequest(ret(id, tool, content)),
		}
	}
	return slices.Concat(
		[]processor.Message{processor.UserMessage("Add a --verbose flag to cmd/tool/main.go.")},
		step("c1", "Read", `{"file_path":"/src/cmd/tool/main.go"}`, "package main\nfunc main() {}"),
		step("c2", "Edit", `{"file_path":"/src/cmd/tool/main.go","old_string":"a","new_string":"b"}`, "ok"),
		step("c3", "bash", `{"command":"go test ./... 2>&1 | tail"}`, "--- FAIL: TestFlags\nmain_test.go:12: error: unknown flag"),
		[]processor.Message{processor.TextMessage("The flag is added; TestFlags fails on an unknown flag.")},
	)
}

func response(parts ...processor.Part) processor.Message {
	return processor.NewResponse(parts...).WithMeta(processor.Meta{ModelName: "test-model"})
}

func call(id, tool, args string) processor.ToolCall {
	return processor.ToolCall{ToolCallID: id, ToolName: tool, Args: args}
}

func ret(id, tool, content string) processor.ToolReturn {
	return processor.ToolReturn{ToolCallID: id, ToolName: tool, Content: content}
}

func short() []processor.Message {
	return []processor.Message{
		processor.SystemMessage("You are a helpful assistant."),
		processor.UserMessage("What is the capital of France?"),
		response(processor.Text{Content: "Paris."}),
		processor.UserMessage("And of Italy?"),
	}
}

// lines returns n numbered lines of output, like a command would print.
func lines(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s line %d: some output of the command, more or less interesting\n", prefix, i)
	}
	return b.String()
}

func longToolLoop() []processor.Message {
	h := []processor.Message{
		processor.NewRequest(
			processor.SystemPrompt{Content: "You are a coding agent. Use the tools."},
			processor.UserPrompt{Content: "Find out why the tests fail and fix them."},
		),
	}
	for i := range 40 {
		id := fmt.Sprintf("call_%d", i)
		resp := response(processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: fmt.Sprintf(`{"command":"go test ./pkg%d/..."}`, i)})
		if i%3 == 0 {
			resp.Parts = append([]processor.Part{processor.Thinking{Content: "Let me look at package " + fmt.Sprint(i)}, processor.Text{Content: "Running the tests."}}, resp.Parts...)
		}
		meta := resp.Info()
		meta.Usage = processor.Usage{InputTokens: int64(500 + 400*i), OutputTokens: 30, PromptMessages: len(h)}
		resp = resp.WithMeta(meta)
		h = append(h, resp)
		out := lines(fmt.Sprintf("pkg%d", i), 1+(i*7)%120)
		if i%10 == 9 {
			h = append(h, processor.NewRequest(processor.RetryPrompt{ToolCallID: id, ToolName: "bash", Content: "command timed out"}))
			continue
		}
		h = append(h, processor.NewRequest(ret(id, "bash", out)))
	}
	h = append(h,
		response(processor.Text{Content: "The tests pass now: the fixture path was wrong."}),
		processor.UserMessage("Great, now commit it."),
	)
	return h
}

func parallelCalls() []processor.Message {
	return []processor.Message{
		processor.UserMessage("Compare the three config files."),
		response(
			processor.Text{Content: "Reading them."},
			call("a", "read_file", `{"path":"a.yaml"}`),
			call("b", "read_file", `{"path":"b.yaml"}`),
			call("c", "read_file", `{"path":"c.yaml"}`),
		),
		processor.NewRequest(ret("c", "read_file", lines("c.yaml", 50)), ret("a", "read_file", "key: 1\n")),
		processor.NewRequest(processor.RetryPrompt{ToolCallID: "b", ToolName: "read_file", Content: "file not found"}),
		response(call("d", "list_dir", `{"path":"."}`), call("e", "bash", `{"command":"cat b.yml"}`)),
		processor.NewRequest(ret("e", "bash", lines("b.yml", 80))),
		processor.NewRequest(ret("d", "list_dir", "a.yaml\nb.yml\nc.yaml\n")),
		response(processor.Text{Content: "a and c differ in every key; b is named b.yml."}),
		processor.UserMessage("Thanks. Which one is newest?"),
		response(call("f", "bash", `{"command":"ls -lt"}`)),
		processor.NewRequest(ret("f", "bash", "c.yaml\na.yaml\nb.yml\n")),
	}
}

func jsonReturns() []processor.Message {
	items := make([]map[string]any, 80)
	for i := range items {
		items[i] = map[string]any{"id": i, "title": fmt.Sprintf("Issue %d: crash on empty input", i), "labels": []string{"bug", "p2"}}
	}
	big, _ := json.Marshal(map[string]any{"total": len(items), "items": items})
	return []processor.Message{
		processor.UserMessage("List the open issues and the weather."),
		response(call("j1", "issues", `{"state":"open"}`), call("j2", "weather", `{"city":"Zürich"}`)),
		processor.NewRequest(
			processor.ToolReturn{ToolCallID: "j1", ToolName: "issues", JSON: big},
			processor.ToolReturn{ToolCallID: "j2", ToolName: "weather", JSON: json.RawMessage(`{"city":"Zürich","temp_c":-3.5,"sky":"❄️"}`)},
		),
		response(processor.Text{Content: "80 open issues; it is snowing in Zürich."}),
		processor.UserMessage("Close issue 3."),
		response(call("j3", "close_issue", `{"id":3}`)),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "j3", ToolName: "close_issue", JSON: json.RawMessage(`{"ok":true}`)}),
	}
}

func multiPart() []processor.Message {
	return []processor.Message{
		processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{
			{Type: "text", Text: "What is in this picture?"},
			{Type: "image_url", Data: json.RawMessage(`{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}`)},
			{Type: "text", Text: "Be brief."},
		}}),
		response(call("m1", "ocr", `{}`)),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "m1", ToolName: "ocr", Contents: []string{"page 1", lines("ocr", 60), "page 3"}}),
		response(processor.Text{Content: "A scanned invoice."}),
		processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "Total?"}}}),
	}
}

func unicode() []processor.Message {
	long := strings.Repeat("日本語のテキスト、👩‍💻 émoji e\u0301 עברית ", 300)
	return []processor.Message{
		processor.SystemMessage("Réponds en français, s'il te plaît. 🇫🇷"),
		processor.UserMessage("Lis le fichier 文件.txt — merci ! ✨"),
		response(processor.Thinking{Content: "Je vais lire le fichier… ∑"}, call("u1", "read_file", `{"path":"文件.txt"}`)),
		processor.NewRequest(ret("u1", "read_file", long)),
		response(processor.Text{Content: "Le fichier contient du japonais, de l'hébreu et des émojis 😀."}),
		processor.UserMessage("Привет! Ωμέγα? 한국어 ok."),
	}
}

// opaqueItems is a tool loop as the Responses and Messages wire formats
// give it: reasoning and thinking kept whole, and items abridge does not
// model (a compaction item, redacted thinking, a hosted tool's call and
// output) carried as they came.
func opaqueItems() []processor.Message {
	out := lines("out", 150)
	reasoning := processor.Thinking{Content: "List first.", API: "responses",
		Raw: `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"List first."}],"encrypted_content":"gAAAAB..."}`}
	thinking := processor.Thinking{Content: "Read it.", Signature: "EqQBCkYIBx==", API: "messages",
		Raw: `{"type":"thinking","thinking":"Read it.","signature":"EqQBCkYIBx=="}`}
	return []processor.Message{
		processor.NewRequest(processor.Opaque{API: "responses", Type: "compaction", Raw: `{"type":"compaction","encrypted_content":"gAAAAC..."}`}),
		processor.UserMessage("Tidy the repository."),
		response(reasoning, call("o1", "shell", `{"cmd":"ls"}`)),
		processor.NewRequest(ret("o1", "shell", out)),
		response(processor.Opaque{API: "messages", Type: "redacted_thinking", Raw: `{"type":"redacted_thinking","data":"EmwKAhgB"}`}, thinking, call("o2", "read_file", `{"path":"go.mod"}`)),
		processor.NewRequest(ret("o2", "read_file", out)),
		response(processor.Opaque{API: "responses", Type: "web_search_call", Raw: `{"type":"web_search_call","id":"ws_1","status":"completed"}`}, call("o3", "shell", `{"cmd":"git status"}`)),
		processor.NewRequest(processor.Opaque{API: "responses", Type: "local_shell_call_output", Raw: `{"type":"local_shell_call_output","call_id":"ls_9","output":"ok"}`}, ret("o3", "shell", out)),
		response(processor.Text{Content: "Done."}),
		processor.UserMessage("Thanks. Anything else?"),
	}
}
