package receipt

import (
	"math"
	"time"
)

// Request is the record of one request a proxy forwarded.
type Request struct {
	// Conversation is the conversation's id (see [ConversationID]).
	Conversation string `json:"conversation"`
	// Time is when the request's answer ended.
	Time time.Time `json:"time"`
	// API is the request's wire API, Model its model.
	API   string `json:"api"`
	Model string `json:"model"`
	// Status is the HTTP status the client was answered with.
	Status int `json:"status"`
	// Client is the history as the client sent it, Sent as it was
	// forwarded (the last try's, after a context overflow); both about 4
	// characters a token (processor.ContentTokens), so they compare.
	Client Size `json:"client"`
	Sent   Size `json:"sent"`
	// Usage is what the provider reported for the request as forwarded;
	// nil when it reported nothing.
	Usage *Usage `json:"usage,omitempty"`
	// Receipt is the id of the compaction the forwarded history carries
	// (the newest, when it carries several); "" when none.
	Receipt string `json:"receipt,omitempty"`
	// Compacted is set when the request made that compaction, rather
	// than carrying one made before.
	Compacted bool `json:"compacted,omitempty"`
}

// Prompt returns the request's prompt tokens with abridge and without it:
// with is the provider's input tokens when it reported them (reported is
// then set), else the estimate of what was sent; without adds the tokens
// abridge took out (Client.Tokens - Sent.Tokens, estimated), scaled by
// the provider's count over the estimate of what was sent when it
// reported one, so that both are counted alike.
func (q Request) Prompt() (with, without int64, reported bool) {
	with = int64(q.Sent.Tokens)
	removed := float64(q.Client.Tokens - q.Sent.Tokens)
	if q.Usage != nil && q.Usage.Input > 0 {
		if q.Sent.Tokens > 0 {
			removed *= float64(q.Usage.Input) / float64(q.Sent.Tokens)
		}
		with, reported = q.Usage.Input, true
	}
	return with, with + int64(math.Round(removed)), reported
}

// Conversation sums up the requests of one conversation.
type Conversation struct {
	// ID is the conversation's id (see [ConversationID]).
	ID string `json:"id"`
	// API and Model are those of its last request.
	API   string `json:"api"`
	Model string `json:"model"`
	// Requests counts its requests recorded, Compactions its receipts.
	Requests    int `json:"requests"`
	Compactions int `json:"compactions"`
	// Saved is the estimated prompt tokens abridge took out of its
	// requests, summed: Client.Tokens - Sent.Tokens over the requests.
	Saved int64 `json:"saved"`
	// First and Last are the times of its first and last request.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}
