package session

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

var _ agent.Store = (*Session)(nil)

// TestAgentStore runs the agent with a *Session as its store, one turn at a
// time, each turn resumed from the stored working history as a restarted
// host would: the working history is the agent's, and the transcript holds
// every message the turns created.
func TestAgentStore(t *testing.T) {
	// Past four messages, a summary and the prompt about to be sent.
	squash := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		if len(h) <= 4 {
			return h, nil
		}
		return []processor.Message{processor.UserMessage(fmt.Sprintf("summary of %d messages", len(h)-1)), h[len(h)-1]}, nil
	})
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		var created []processor.Message
		for turn := range 4 {
			// A new store each turn, as after a restart.
			s := openSession(t, openStore(t, dsn), "agent")
			history := working(t, s)
			rec := model.NewRecorder(model.RespondText(fmt.Sprintf("answer %d", turn)))
			a := agent.New(rec, agent.WithProcessors(squash), agent.WithSystemPrompt("be brief"), agent.WithStore(s))
			res, err := a.Run(ctx, history, fmt.Sprintf("question %d", turn))
			if err != nil {
				t.Fatal(err)
			}
			created = append(created, res.New...)
			if diff := cmp.Diff(res.History, working(t, s), eq); diff != "" {
				t.Fatalf("turn %d: stored working history (-agent +stored):\n%s", turn, diff)
			}
		}
		s := openSession(t, openStore(t, dsn), "agent")
		tr := transcript(t, s)
		got := make([]processor.Message, len(tr))
		for i, e := range tr {
			got[i] = e.Message
		}
		if diff := cmp.Diff(created, got, eq); diff != "" {
			t.Errorf("transcript (-created +stored):\n%s", diff)
		}
		if len(compactions(t, s)) == 0 {
			t.Error("no compaction recorded")
		}
	})
}
