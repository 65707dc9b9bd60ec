package transcript_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/transcript"
)

// Histories are stored as OpenAI-format JSON: Load reads a bare array or an
// object with "messages", Save writes the object form.
func ExampleLoad() {
	const stored = `{"source": "example", "messages": [
		{"role": "user", "content": "Hi"},
		{"role": "assistant", "content": "Hello!"}
	]}`
	history, err := transcript.Load(strings.NewReader(stored))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(history), "messages; last says", history[1].Text())
	if err := transcript.Save(os.Stdout, history); err != nil {
		fmt.Println(err)
	}

	_, err = transcript.Load(strings.NewReader(`[{"role":"user","content":"Hi"},{"role":"tool","content":"x"}]`))
	fmt.Println(err)
	// Output:
	// 2 messages; last says Hello!
	// {
	//   "messages": [
	//     {
	//       "role": "user",
	//       "content": "Hi"
	//     },
	//     {
	//       "role": "assistant",
	//       "content": "Hello!"
	//     }
	//   ]
	// }
	// message 1: tool message without tool_call_id
}

// A saved transcript usually ends with the model's answer. Load it, and
// processor.ProcessTranscript runs the processors as they ran before that
// answer was asked for: here the trimmer cuts the old tool output to fit
// 120 characters and leaves the rest, the answer included, as it was.
func Example_process() {
	saved := `[
		{"role": "user", "content": "List the files."},
		{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
		{"role": "tool", "tool_call_id": "c1", "content": "` + strings.Repeat(`file.go\n`, 100) + `"},
		{"role": "assistant", "content": "There are 100 files."},
		{"role": "user", "content": "Thanks!"},
		{"role": "assistant", "content": "You are welcome."}
	]`
	history, err := transcript.Load(strings.NewReader(saved))
	if err != nil {
		fmt.Println(err)
		return
	}
	trim := trimtools.New(trimtools.Options{MaxChars: 120})
	out, err := processor.ProcessTranscript(context.Background(), trim, history)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range out {
		fmt.Println(out[i].Kind, processor.Chars(history[i]), "→", processor.Chars(out[i]))
	}
	// Output:
	// request 15 → 15
	// response 6 → 6
	// request 800 → 111
	// response 20 → 20
	// request 7 → 7
	// response 16 → 16
}

// FromRawMessages reads a request body's messages, one raw JSON object
// each, and ToRawMessages writes a history back in that form. Members are
// matched by their exact names, as the API does: "Name" is an unknown
// member, not the user's name.
func ExampleFromRawMessages() {
	raws := []json.RawMessage{
		json.RawMessage(`{"role":"user","content":"List the files.","Name":"ann"}`),
		json.RawMessage(`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}`),
		json.RawMessage(`{"role":"tool","tool_call_id":"c1","content":"a.go"}`),
	}
	history, err := transcript.FromRawMessages(raws)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q by %q; %s answers %s\n", history[0].Text(), history[0].Parts[0].(processor.UserPrompt).Name,
		history[2].Parts[0].(processor.ToolReturn).ToolCallID, history[1].ToolCalls()[0].ToolName)
	back, err := transcript.ToRawMessages(history)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n", transcript.JoinRawMessages(back))
	// Output:
	// "List the files." by ""; c1 answers ls
	// [{"role":"user","content":"List the files."},{"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"ls"},"id":"c1","type":"function"}]},{"role":"tool","content":"a.go","tool_call_id":"c1"}]
}
