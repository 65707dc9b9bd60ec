package agent

import (
	"time"

	"github.com/abridge-go/abridge/processor"
)

// Event kinds, the values of [Event.Kind].
const (
	// EventProcessed: the processor chain changed the history before a
	// request (a trim, a compaction) and the processed history replaced
	// the working one. MessagesBefore and TokensBefore give its size
	// before, Messages and Tokens after, both estimated from the messages
	// alone (processor.ContentTokens), so that they compare.
	EventProcessed = "history-processed"
	// EventRequest: a request is being sent. Messages and Tokens give the
	// size of the history sent (Tokens is estimated with
	// processor.EstimateTokens).
	EventRequest = "request"
	// EventResponse: a response arrived. Usage is what the provider
	// reported, ToolCalls how many tools the model asked for, Duration how
	// long the request took.
	EventResponse = "response"
	// EventTool: a tool call was answered. ToolName and ToolCallID name
	// the call, Duration is how long the tool ran, and Err is set when the
	// call was answered with a retry prompt instead of a result (the tool
	// failed, is unknown — [ErrUnknownTool] — or got invalid arguments —
	// [ErrInvalidArguments]).
	EventTool = "tool"
	// EventCompactionForced: the provider said the prompt overflows its
	// context window and the agent forced its compactor before retrying.
	// Cause is the provider's error; MessagesBefore and TokensBefore give
	// the history's size before, Messages and Tokens after (estimated as
	// for EventProcessed); Err is set
	// when the compaction itself failed (the turn then fails).
	EventCompactionForced = "compaction-forced"
)

// Event is one step of a turn, reported to the callback of [WithEvents] for
// a user interface to show. Kind says which step (the Event* constants);
// the fields a kind does not document are zero. The summaries a window
// processor writes are not reported here: hosts wire the window's own event
// callback for those.
type Event struct {
	// Kind is one of the Event* constants.
	Kind string
	// Step is the 1-based number of the model request the event belongs
	// to within the turn.
	Step int
	// Messages is the number of messages of the history concerned.
	Messages int
	// Tokens is the estimated prompt tokens of the history concerned.
	Tokens int
	// MessagesBefore is the number of messages before a change.
	MessagesBefore int
	// TokensBefore is the estimated prompt tokens before a change.
	TokensBefore int
	// Usage is the provider-reported usage of a response.
	Usage processor.Usage
	// ToolCalls is the number of tool calls of a response.
	ToolCalls int
	// ToolName is the tool of a call.
	ToolName string
	// ToolCallID is the ID of a call.
	ToolCallID string
	// Duration is how long a request or a tool took.
	Duration time.Duration
	// Cause is what triggered a forced compaction.
	Cause error
	// Err is the error of a failed tool call or compaction.
	Err error
}
