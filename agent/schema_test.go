package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// searchTool has a schema with nested objects, an enum, a bound and no
// additional properties.
var searchTool = agent.Tool{
	Name: "search",
	Parameters: json.RawMessage(`{
		"type": "object",
		"properties": {
			"query": {"type": "string", "minLength": 1},
			"limit": {"type": "integer", "minimum": 1, "maximum": 50},
			"scope": {"enum": ["code", "docs"]},
			"filter": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
		},
		"required": ["query"],
		"additionalProperties": false
	}`),
	Func: func(_ context.Context, args json.RawMessage) (string, error) { return "found " + string(args), nil },
}

// TestToolArgumentsSchema calls tools with arguments that do or do not
// match their Parameters: a mismatch never reaches the tool and goes back
// to the model as a retry prompt naming each thing that is wrong, by its
// place in the arguments; the event reports ErrInvalidArguments.
func TestToolArgumentsSchema(t *testing.T) {
	tests := []struct {
		name string
		tool agent.Tool
		args string
		want string // what is wrong, or "" when the tool runs
	}{
		{"matches", searchTool, `{"query":"x","limit":5,"scope":"docs","filter":{"path":"a/b"}}`, ""},
		{"matches, minimal", addTool, `{"a":1,"b":2.5}`, ""},
		{"wrong type", addTool, `{"a":"1","b":2}`, "/a: got string, want number"},
		{"missing property", addTool, `{"a":1}`, "/: missing property 'b'"},
		{"no arguments", addTool, ``, "/: missing properties 'a', 'b'"},
		{"several mismatches", searchTool, `{"query":"","limit":0,"scope":"web","extra":true}`,
			"/: additional properties 'extra' not allowed; /limit: minimum: got 0, want 1; /query: minLength: got 0, want 1; /scope: value must be one of 'code', 'docs'"},
		{"nested", searchTool, `{"query":"x","filter":{"path":3}}`, "/filter/path: got number, want string"},
		{"not an object", addTool, `[1,2]`, "/: got array, want object"},
		{"no schema", echoTool, `{"anything":[1,"two"]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := false
			tool := tt.tool
			inner := tool.Func
			tool.Func = func(ctx context.Context, args json.RawMessage) (string, error) {
				ran = true
				return inner(ctx, args)
			}
			var toolErr error
			events := agent.WithEvents(func(_ context.Context, e agent.Event) {
				if e.Kind == agent.EventTool {
					toolErr = e.Err
				}
			})
			rec := model.NewRecorder(model.Respond(callsResponse(call("c1", tool.Name, tt.args))), model.RespondText("ok"))
			res, err := agent.New(rec, agent.WithTools(tool), events).Run(context.Background(), nil, "go")
			if err != nil {
				t.Fatal(err)
			}
			answer := res.History[2].Parts[0]
			if tt.want == "" {
				if _, ok := answer.(processor.ToolReturn); !ok || !ran || toolErr != nil {
					t.Fatalf("ran %v, event error %v, answer %#v; want the tool's return", ran, toolErr, answer)
				}
				return
			}
			want := processor.RetryPrompt{ToolName: tool.Name, ToolCallID: "c1",
				Content: "invalid tool arguments for " + tool.Name + ": " + tt.want + "; call it again with arguments matching its parameters"}
			if diff := cmp.Diff(want, answer); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if ran {
				t.Error("the tool ran with arguments that do not match its parameters")
			}
			if !errors.Is(toolErr, agent.ErrInvalidArguments) {
				t.Errorf("event error %v, want ErrInvalidArguments", toolErr)
			}
		})
	}
}

// TestToolSchemaConfig checks the Parameters an agent refuses: they make
// Run fail with ErrConfig, naming the tool, before any model call.
func TestToolSchemaConfig(t *testing.T) {
	tests := []struct {
		name, params, want string
	}{
		{"not JSON", `{"type":`, "parameters are not JSON"},
		{"not a schema", `{"type": 5}`, "parameters are not a valid JSON schema"},
		{"a reference to a file", `{"$ref": "file:///etc/hostname"}`, "only references within the schema itself are followed"},
		{"a reference to the network", `{"$ref": "https://example.com/s.json"}`, "only references within the schema itself are followed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := model.NewRecorder(model.RespondText("ok"))
			tool := agent.Tool{Name: "bad", Parameters: json.RawMessage(tt.params), Func: echoTool.Func}
			_, err := agent.New(rec, agent.WithTools(tool)).Run(context.Background(), nil, "hi")
			if !errors.Is(err, agent.ErrConfig) || !strings.Contains(err.Error(), `tool "bad"`) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want ErrConfig naming the tool and saying %q", err, tt.want)
			}
			if len(rec.Calls()) != 0 {
				t.Error("a misconfigured agent called the model")
			}
		})
	}
	// References inside the schema are followed.
	local := agent.Tool{Name: "local", Func: echoTool.Func, Parameters: json.RawMessage(`{
		"$defs": {"n": {"type": "integer"}},
		"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}}`)}
	rec := model.NewRecorder(model.Respond(callsResponse(call("c1", "local", `{"n":"x"}`))), model.RespondText("ok"))
	res, err := agent.New(rec, agent.WithTools(local)).Run(context.Background(), nil, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res.History[2].Parts[0].(processor.RetryPrompt); !ok || !strings.Contains(r.Content, "/n: got string, want integer") {
		t.Errorf("answer %#v; want a retry prompt from the referenced definition", res.History[2].Parts[0])
	}
}
