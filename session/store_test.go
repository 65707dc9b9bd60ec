package session

import (
	"github.com/abridge-go/abridge/session/internal/backend"

	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/zap/zaptest"

	"github.com/abridge-go/abridge/processor"
)

func openStore(t testing.TB, dsn string) *Store {
	t.Helper()
	st, err := Open(context.Background(), driver(dsn), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return st
}

// openToClose opens the store at dsn for a test that closes it itself, to
// open the same database again.
func openToClose(t testing.TB, dsn string) *Store {
	t.Helper()
	st, err := Open(context.Background(), driver(dsn), nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func openSession(t testing.TB, st *Store, name string) *Session {
	t.Helper()
	s, err := st.Session(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// eq compares messages with processor.Equal.
var eq = cmp.Comparer(processor.Equal)

func working(t testing.TB, s *Session) []processor.Message {
	t.Helper()
	w, err := s.Working(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func transcript(t testing.TB, s *Session) []Entry {
	t.Helper()
	e, err := s.Transcript(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func compactions(t testing.TB, s *Session) []Compaction {
	t.Helper()
	c, err := s.Compactions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ignoreTime leaves Compaction.Time out of comparisons.
var ignoreTime = cmpopts.IgnoreFields(Compaction{}, "Time")

// conv returns n messages of a plain conversation: user, text, user, text….
func conv(prefix string, n int) []processor.Message {
	out := make([]processor.Message, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = processor.UserMessage(fmt.Sprintf("%s question %d", prefix, i))
		} else {
			out[i] = processor.TextMessage(fmt.Sprintf("%s answer %d", prefix, i))
		}
	}
	return out
}

func entries(msgs []processor.Message, firstSeq int64) []Entry {
	out := make([]Entry, len(msgs))
	for i, m := range msgs {
		out[i] = Entry{Seq: firstSeq + int64(i), Message: m}
	}
	return out
}

func TestAppendSurvivesReopen(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		msgs := everyField()
		st := openToClose(t, dsn)
		s := openSession(t, st, "all-parts")
		if err := s.Append(ctx, msgs[:2]...); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, msgs[2:]...); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx); err != nil { // nothing: no-op
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}

		s = openSession(t, openStore(t, dsn), "all-parts")
		if diff := cmp.Diff(msgs, working(t, s), eq); diff != "" {
			t.Errorf("working history after reopening (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(entries(msgs, 1), transcript(t, s), eq); diff != "" {
			t.Errorf("transcript after reopening (-want +got):\n%s", diff)
		}
		if got := compactions(t, s); len(got) != 0 {
			t.Errorf("compactions = %v, want none", got)
		}
	})
}

func TestReplace(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		s := openSession(t, openStore(t, newDSN(t)), "replace")
		msgs := conv("first", 10)
		if err := s.Append(ctx, msgs...); err != nil {
			t.Fatal(err)
		}

		// A window: keep the head and a tail, summarise the middle.
		summary := processor.UserMessage("summary of 2-7")
		w1 := []processor.Message{msgs[0], summary, msgs[7], msgs[8], msgs[9]}
		if err := s.Replace(ctx, w1); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w1, working(t, s), eq); diff != "" {
			t.Errorf("working history after the first compaction (-want +got):\n%s", diff)
		}

		// More messages, then a second window that supersedes the summary
		// and trims a message (a new copy replaces it).
		more := conv("second", 4)
		if err := s.Append(ctx, more...); err != nil {
			t.Fatal(err)
		}
		summary2 := processor.UserMessage("summary of 2-9")
		trimmed := processor.TextMessage("second answer 1 [trimmed]")
		w2 := []processor.Message{msgs[0], summary2, more[0], trimmed, more[2], more[3]}
		if err := s.Replace(ctx, w2); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w2, working(t, s), eq); diff != "" {
			t.Errorf("working history after the second compaction (-want +got):\n%s", diff)
		}

		// Replacing with the same history records nothing.
		if err := s.Replace(ctx, w2); err != nil {
			t.Fatal(err)
		}

		wantTranscript := append(entries(msgs, 1), entries(more, 12)...)
		compactedBy := map[int64]int64{2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1, 8: 2, 9: 2, 10: 2, 13: 2}
		for i, e := range wantTranscript {
			if id, ok := compactedBy[e.Seq]; ok {
				wantTranscript[i].Compacted, wantTranscript[i].CompactionID = true, id
			}
		}
		if diff := cmp.Diff(wantTranscript, transcript(t, s), eq); diff != "" {
			t.Errorf("transcript (-want +got):\n%s", diff)
		}
		want := []Compaction{
			{
				ID: 1, Covered: []int64{2, 3, 4, 5, 6, 7},
				Inserted: []Entry{{Seq: 11, Message: summary, Compacted: true, CompactionID: 2}},
				Summary:  "summary of 2-7", After: 10,
			},
			{
				ID: 2, Covered: []int64{8, 9, 10, 13}, Superseded: []int64{11},
				Inserted: []Entry{{Seq: 16, Message: summary2}, {Seq: 17, Message: trimmed}},
				Summary:  "summary of 2-9\n\nsecond answer 1 [trimmed]", After: 15,
			},
		}
		got := compactions(t, s)
		for _, c := range got {
			if c.Time.IsZero() {
				t.Errorf("compaction %d has no time", c.ID)
			}
		}
		if diff := cmp.Diff(want, got, eq, ignoreTime); diff != "" {
			t.Errorf("compactions (-want +got):\n%s", diff)
		}
	})
}

func TestReplaceEdgeCases(t *testing.T) {
	msgs := conv("m", 6)
	repeated := processor.TextMessage("ok")
	tests := []struct {
		name     string
		initial  []processor.Message
		next     []processor.Message
		want     []Compaction // Time ignored
		workSeqs []int64      // the seqs of the working history afterwards
	}{
		{
			name: "unchanged", initial: msgs, next: msgs,
			workSeqs: []int64{1, 2, 3, 4, 5, 6},
		},
		{
			name: "drop only", initial: msgs, next: []processor.Message{msgs[0], msgs[5]},
			want:     []Compaction{{ID: 1, Covered: []int64{2, 3, 4, 5}, After: 6}},
			workSeqs: []int64{1, 6},
		},
		{
			name: "insert only", initial: msgs, next: []processor.Message{msgs[0], msgs[1], repeated, msgs[2], msgs[3], msgs[4], msgs[5]},
			want:     []Compaction{{ID: 1, Inserted: []Entry{{Seq: 7, Message: repeated}}, Summary: "ok", After: 6}},
			workSeqs: []int64{1, 2, 7, 3, 4, 5, 6},
		},
		{
			name: "everything", initial: msgs, next: nil,
			want:     []Compaction{{ID: 1, Covered: []int64{1, 2, 3, 4, 5, 6}, After: 6}},
			workSeqs: nil,
		},
		{
			name:     "of equal messages the first is kept",
			initial:  []processor.Message{msgs[0], repeated, msgs[2], repeated, msgs[4]},
			next:     []processor.Message{msgs[0], repeated, msgs[4]},
			want:     []Compaction{{ID: 1, Covered: []int64{3, 4}, After: 5}},
			workSeqs: []int64{1, 2, 5},
		},
		{
			name:     "a trimmed copy in the middle",
			initial:  msgs,
			next:     []processor.Message{msgs[0], processor.TextMessage("[trimmed]"), msgs[2], msgs[3], msgs[4], msgs[5]},
			want:     []Compaction{{ID: 1, Covered: []int64{2}, Inserted: []Entry{{Seq: 7, Message: processor.TextMessage("[trimmed]")}}, Summary: "[trimmed]", After: 6}},
			workSeqs: []int64{1, 7, 3, 4, 5, 6},
		},
	}
	backends(t, func(t *testing.T, newDSN newDSN) {
		st := openStore(t, newDSN(t))
		ctx := context.Background()
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := openSession(t, st, tt.name)
				if err := s.Append(ctx, tt.initial...); err != nil {
					t.Fatal(err)
				}
				if err := s.Replace(ctx, tt.next); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.next, working(t, s), eq, cmp.Comparer(func(a, b []processor.Message) bool {
					return len(a) == len(b) && (len(a) == 0 || cmp.Equal(a, b, eq))
				})); diff != "" {
					t.Errorf("working history (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.want, compactions(t, s), eq, ignoreTime); diff != "" {
					t.Errorf("compactions (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.workSeqs, workingSeqs(t, st, s)); diff != "" {
					t.Errorf("working seqs (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// workingSeqs reads the seqs of the working history straight from the
// database.
func workingSeqs(t testing.TB, st *Store, s *Session) []int64 {
	t.Helper()
	var seqs []int64
	err := st.read(context.Background(), "test", func(tx backend.Tx) error {
		rs, err := tx.Query(context.Background(), `SELECT seq FROM working WHERE session_id = $1 ORDER BY pos`, s.id)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var seq int64
			if err := rs.Scan(&seq); err != nil {
				return err
			}
			seqs = append(seqs, seq)
		}
		return rs.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

func TestConflict(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		a := openSession(t, openStore(t, dsn), "shared")
		b := openSession(t, openStore(t, dsn), "shared")
		msgs := conv("c", 6)

		if err := a.Append(ctx, msgs[:4]...); err != nil {
			t.Fatal(err)
		}
		seenByA := working(t, a)
		// b has not read since a wrote: its Replace is refused.
		if err := b.Replace(ctx, seenByA[2:]); !errors.Is(err, ErrConflict) {
			t.Fatalf("stale Replace: got %v, want ErrConflict", err)
		}
		// b appends (always accepted); a did not see it, so a's Replace
		// would hide it: refused.
		if err := b.Append(ctx, msgs[4]); err != nil {
			t.Fatal(err)
		}
		err := a.Replace(ctx, seenByA[2:])
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("Replace after another handle's Append: got %v, want ErrConflict", err)
		}
		if !strings.Contains(err.Error(), `"shared"`) {
			t.Errorf("error %q does not name the session", err)
		}
		// a appends too: still stale, the append does not catch it up.
		if err := a.Append(ctx, msgs[5]); err != nil {
			t.Fatal(err)
		}
		if err := a.Replace(ctx, seenByA[2:]); !errors.Is(err, ErrConflict) {
			t.Fatalf("Replace after a stale Append: got %v, want ErrConflict", err)
		}
		if diff := cmp.Diff(msgs, working(t, b), eq); diff != "" {
			t.Errorf("refused writes changed the working history (-want +got):\n%s", diff)
		}
		// After reading again, a may replace.
		w := working(t, a)
		if err := a.Replace(ctx, w[2:]); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(msgs[2:], working(t, b), eq); diff != "" {
			t.Errorf("working history (-want +got):\n%s", diff)
		}
		// A handle that writes with nobody else writing stays current.
		if err := a.Append(ctx, processor.UserMessage("more")); err != nil {
			t.Fatal(err)
		}
		if err := a.Replace(ctx, []processor.Message{processor.UserMessage("more")}); err != nil {
			t.Fatalf("Replace by the only writer: %v", err)
		}
	})
}

func TestList(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		st := openStore(t, newDSN(t))
		if got, err := st.List(ctx); err != nil || len(got) != 0 {
			t.Fatalf("List of a new store = %v, %v; want nothing", got, err)
		}
		b := openSession(t, st, "beta")
		if err := b.Append(ctx, conv("b", 5)...); err != nil {
			t.Fatal(err)
		}
		w := working(t, b)
		if err := b.Replace(ctx, append([]processor.Message{processor.UserMessage("summary")}, w[3:]...)); err != nil {
			t.Fatal(err)
		}
		openSession(t, st, "alpha")
		openSession(t, st, "alpha") // opening again does not create another

		got, err := st.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []Info{{Name: "alpha"}, {Name: "beta", Messages: 5, Compactions: 1, Working: 3}}
		for _, i := range got {
			if i.Created.IsZero() || i.Updated.Before(i.Created) {
				t.Errorf("%s: created %v, updated %v", i.Name, i.Created, i.Updated)
			}
		}
		if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool {
			s := p.Last().String()
			return s == ".Created" || s == ".Updated"
		}, cmp.Ignore())); diff != "" {
			t.Errorf("List (-want +got):\n%s", diff)
		}
		if got[1].Updated.Equal(got[1].Created) {
			t.Errorf("beta: Updated not moved by writes: %v", got[1].Updated)
		}
	})
}

func TestErrors(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		st := openStore(t, newDSN(t))
		if _, err := st.Session(ctx, ""); err == nil {
			t.Error("Session(\"\"): no error")
		}
		s := openSession(t, st, "bad")
		good := processor.UserMessage("fine")
		bad := processor.Message{Parts: []processor.Part{processor.Text{Content: "no kind"}}}
		if err := s.Append(ctx, good, bad); !errors.Is(err, ErrCodec) {
			t.Errorf("Append of a message of no kind: got %v, want ErrCodec", err)
		}
		if err := s.Append(ctx, good); err != nil {
			t.Fatal(err)
		}
		if err := s.Replace(ctx, []processor.Message{good, bad}); !errors.Is(err, ErrCodec) {
			t.Errorf("Replace with a message of no kind: got %v, want ErrCodec", err)
		}
		if diff := cmp.Diff([]processor.Message{good}, working(t, s), eq); diff != "" {
			t.Errorf("failed writes changed the working history (-want +got):\n%s", diff)
		}
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Append(canceled, good); !errors.Is(err, context.Canceled) {
			t.Errorf("Append with a canceled context: got %v", err)
		}
	})
}

func TestSchemaVersion(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		st := openToClose(t, dsn)
		var v int64
		if err := st.read(ctx, "test", func(tx backend.Tx) error {
			return queryRow(ctx, tx, `SELECT version FROM schema_version`).Scan(&v)
		}); err != nil {
			t.Fatal(err)
		}
		if v != schemaVersion {
			t.Errorf("schema_version = %d, want %d", v, schemaVersion)
		}
		// A database from a newer program is refused, not altered.
		if err := st.write(ctx, "test", func(tx backend.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE schema_version SET version = 99`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if st, err := Open(ctx, driver(dsn), nil); err == nil || !strings.Contains(err.Error(), "newer") {
			if err == nil {
				st.Close()
			}
			t.Errorf("Open of a newer schema: got %v", err)
		}
	})
}

// TestOpenConcurrently opens several stores on one new database at once:
// the schema is created once, and every store works.
func TestOpenConcurrently(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		const n = 6
		stores := make([]*Store, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stores[i], errs[i] = Open(ctx, driver(dsn), nil)
			}()
		}
		wg.Wait()
		for i, st := range stores {
			if errs[i] != nil {
				t.Errorf("store %d: %v", i, errs[i])
				continue
			}
			s := openSession(t, st, "same")
			if err := s.Append(ctx, processor.UserMessage(fmt.Sprint(i))); err != nil {
				t.Error(err)
			}
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		}
		if got := transcript(t, openSession(t, openStore(t, dsn), "same")); len(got) != n {
			t.Errorf("%d messages, want %d", len(got), n)
		}
	})
}

// TestOpenKeywordDSN opens the test server's database with a PostgreSQL
// keyword/value connection string.
func TestOpenKeywordDSN(t *testing.T) {
	u, err := url.Parse(postgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable password='not checked'",
		u.Hostname(), u.Port(), u.User.Username(), strings.TrimPrefix(u.Path, "/"))
	t.Chdir(t.TempDir())
	st := openStore(t, dsn)
	s := openSession(t, st, "kw")
	if err := s.Append(context.Background(), processor.UserMessage("hi")); err != nil {
		t.Fatal(err)
	}
	if got := st.b.Name(); got != "postgres" {
		t.Errorf("backend %s, want postgres", got)
	}
	if files, _ := os.ReadDir("."); len(files) != 0 {
		t.Errorf("Open created %d files in the working directory", len(files))
	}
}
