package session

import (
	"context"
	"testing"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/testkit/recalltest"
)

// TestRecallSession runs an agent whose window summarizes and clears old
// tool outputs, with a session as its store and recall store; the model
// (scripted) recalls a cleared output and a summarized span by reference
// and gets them back; after a restart (a new store on the database, a new
// handle), the session still gives both.
func TestRecallSession(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		sess := openSession(t, openStore(t, dsn), "recall")
		script := &recalltest.Script{}
		res, err := recalltest.Agent(model.NewRecorder(script.Reply), sess).Run(ctx, nil, "Read the files.")
		if err != nil {
			t.Fatal(err)
		}
		if err := script.Check(recalltest.Answers(res.New)); err != nil {
			t.Errorf("during the turn: %v", err)
		}

		// A restart: a new store and handle on the same database.
		again := openSession(t, openStore(t, dsn), "recall")
		output, ok1, err1 := again.Recall(ctx, script.CallID)
		span, ok2, err2 := again.Recall(ctx, script.SummaryRef)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			t.Fatalf("after a restart: found %v %v, errors %v %v", ok1, ok2, err1, err2)
		}
		if err := script.Check(output, span); err != nil {
			t.Errorf("after a restart: %v", err)
		}
		if _, ok, err := again.Recall(ctx, "sum-00000000000000000000"); ok || err != nil {
			t.Errorf("an unknown reference: found %v, %v", ok, err)
		}
	})
}
