package session

import (
	"github.com/abridge-go/abridge/session/internal/backend"

	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// TestWithdraw takes back turns that failed: the working history is the
// one before the turn (or, when another handle wrote meanwhile, the
// current one without the turn's messages), the turn's messages stay in
// the transcript, and the record is a withdrawn turn, not a compaction.
func TestWithdraw(t *testing.T) {
	call := processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: "{}"})
	ret := processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", Content: "a.go"})
	tests := []struct {
		name string
		// turn runs the failed turn on a, with b another handle on the
		// same session; before is the working history when it began.
		turn        func(t *testing.T, a, b *Session, before []processor.Message)
		wantWorking func(before []processor.Message) []processor.Message
		want        []Compaction // the records the turn left, Inserted and Summary aside
		info        Info         // the counts List gives
	}{
		{
			name: "interrupted in a tool loop",
			turn: func(t *testing.T, a, _ *Session, _ []processor.Message) {
				appendAll(t, a, processor.UserMessage("list"), call, ret)
			},
			wantWorking: func(before []processor.Message) []processor.Message { return before },
			want:        []Compaction{{ID: 1, Covered: []int64{5, 6, 7}, After: 7, Withdrawn: "interrupted"}},
			info:        Info{Messages: 7, Withdrawn: 1, Working: 4},
		},
		{
			name: "failed after a compaction",
			turn: func(t *testing.T, a, _ *Session, before []processor.Message) {
				appendAll(t, a, processor.UserMessage("list"))
				w := working(t, a)
				if err := a.Replace(context.Background(), append([]processor.Message{processor.UserMessage("summary")}, w[2:]...)); err != nil {
					t.Fatal(err)
				}
				appendAll(t, a, call)
			},
			wantWorking: func(before []processor.Message) []processor.Message { return before },
			want: []Compaction{
				{ID: 1, Covered: []int64{1, 2}, After: 5},
				{ID: 2, Covered: []int64{5, 7}, Superseded: []int64{6}, After: 7, Withdrawn: "interrupted"},
			},
			info: Info{Messages: 6, Compactions: 1, Withdrawn: 1, Working: 4},
		},
		{
			name: "another handle wrote meanwhile",
			turn: func(t *testing.T, a, b *Session, _ []processor.Message) {
				appendAll(t, a, processor.UserMessage("list"))
				appendAll(t, b, processor.UserMessage("from b"), processor.TextMessage("b's answer"))
				appendAll(t, a, call)
			},
			wantWorking: func(before []processor.Message) []processor.Message {
				return append(before[:len(before):len(before)], processor.UserMessage("from b"), processor.TextMessage("b's answer"))
			},
			want: []Compaction{{ID: 1, Covered: []int64{5, 8}, After: 8, Withdrawn: "interrupted"}},
			info: Info{Messages: 8, Withdrawn: 1, Working: 6},
		},
		{
			name:        "nothing appended",
			turn:        func(*testing.T, *Session, *Session, []processor.Message) {},
			wantWorking: func(before []processor.Message) []processor.Message { return before },
			info:        Info{Messages: 4, Working: 4},
		},
	}
	backends(t, func(t *testing.T, newDSN newDSN) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := context.Background()
				dsn := newDSN(t)
				a := openSession(t, openStore(t, dsn), "s")
				b := openSession(t, openStore(t, dsn), "s")
				before := conv("c", 4)
				appendAll(t, a, before...)
				working(t, b)
				a.BeginTurn()
				tt.turn(t, a, b, before)
				if err := a.Withdraw(ctx, before, "interrupted"); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.wantWorking(before), working(t, b), eq); diff != "" {
					t.Errorf("working history (-want +got):\n%s", diff)
				}
				got := compactions(t, a)
				for i := range got {
					got[i].Inserted, got[i].Summary = nil, ""
				}
				if diff := cmp.Diff(tt.want, got, ignoreTime); diff != "" {
					t.Errorf("records (-want +got):\n%s", diff)
				}
				infos, err := a.st.List(ctx)
				if err != nil {
					t.Fatal(err)
				}
				tt.info.Name = "s"
				if diff := cmp.Diff([]Info{tt.info}, infos, cmp.FilterPath(func(p cmp.Path) bool {
					s := p.Last().String()
					return s == ".Created" || s == ".Updated"
				}, cmp.Ignore())); diff != "" {
					t.Errorf("List (-want +got):\n%s", diff)
				}
				// Withdraw ends the turn: a second one takes nothing back.
				if err := a.Withdraw(ctx, working(t, a), "again"); err != nil {
					t.Fatal(err)
				}
				if n := len(compactions(t, a)); n != len(tt.want) {
					t.Errorf("a second Withdraw recorded %d records, want %d", n, len(tt.want))
				}
			})
		}
	})
}

// TestCurrent checks that a handle knows when someone else wrote.
func TestCurrent(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		a := openSession(t, openStore(t, dsn), "s")
		b := openSession(t, openStore(t, dsn), "s")
		steps := []struct {
			name  string
			do    func()
			wantA bool
		}{
			{"new", func() {}, true},
			{"a appends", func() { appendAll(t, a, processor.UserMessage("a")) }, true},
			{"b appends", func() { appendAll(t, b, processor.UserMessage("b")) }, false},
			{"a appends again", func() { appendAll(t, a, processor.UserMessage("a2")) }, false},
			{"a reads", func() { working(t, a) }, true},
		}
		for _, st := range steps {
			st.do()
			got, err := a.Current(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got != st.wantA {
				t.Errorf("after %s: Current = %v, want %v", st.name, got, st.wantA)
			}
		}
	})
}

// TestMigrateWithdrawn opens a database of the first schema version: it
// gains the withdrawn column, and its compactions stay compactions.
func TestMigrateWithdrawn(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		st := openToClose(t, dsn)
		s := openSession(t, st, "old")
		appendAll(t, s, conv("c", 4)...)
		if err := s.Replace(ctx, conv("c", 4)[2:]); err != nil {
			t.Fatal(err)
		}
		// Back to version 1, as the previous program left it.
		if err := st.write(ctx, "test", func(t backend.Tx) error {
			for _, q := range []string{`DROP TABLE summaries`, `DROP TABLE summary_claims`, `DROP TABLE receipts`, `DROP TABLE requests`} {
				if _, err := t.Exec(ctx, q); err != nil {
					return err
				}
			}
			if _, err := t.Exec(ctx, `ALTER TABLE compactions DROP COLUMN withdrawn`); err != nil {
				return err
			}
			_, err := t.Exec(ctx, `UPDATE schema_version SET version = 1`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		s = openSession(t, openStore(t, dsn), "old")
		got := compactions(t, s)
		if len(got) != 1 || got[0].Withdrawn != "" || len(got[0].Covered) != 2 {
			t.Errorf("compactions after the migration: %+v", got)
		}
	})
}

func appendAll(t *testing.T, s *Session, msgs ...processor.Message) {
	t.Helper()
	if err := s.Append(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}
