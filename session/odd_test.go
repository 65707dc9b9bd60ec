package session

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/abridge-go/abridge/processor"
)

// TestSessionNames opens sessions with unusual names on both backends: any
// valid UTF-8 without NUL works and lists as given; other names are
// refused on both, with the name quoted in the error.
func TestSessionNames(t *testing.T) {
	good := []string{"日本語", `quotes ' " and \ %s`, "tab\tand\nnewline", " ", strings.Repeat("long", 2000)}
	bad := []struct{ name, want string }{
		{"a\x00b", `"a\x00b"`},
		{"caf\xe9", `"caf\xe9"`},
	}
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		st := openStore(t, newDSN(t))
		for _, name := range good {
			s := openSession(t, st, name)
			if err := s.Append(ctx, processor.UserMessage("hi")); err != nil {
				t.Errorf("Append to session %q: %v", name, err)
			}
			if again := openSession(t, st, name); again.id != s.id {
				t.Errorf("session %q opened again as another session", name)
			}
		}
		for _, b := range bad {
			_, err := st.Session(ctx, b.name)
			if err == nil {
				t.Errorf("Session(%q): no error", b.name)
				continue
			}
			if !strings.Contains(err.Error(), b.want) {
				t.Errorf("Session(%q) = %v, want the name quoted as %s", b.name, err, b.want)
			}
		}
		infos, err := st.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, i := range infos {
			got = append(got, i.Name)
		}
		want := []string{" ", strings.Repeat("long", 2000), `quotes ' " and \ %s`, "tab\tand\nnewline", "日本語"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("List (-want +got):\n%s", diff)
		}
	})
}

// TestListOrder lists sessions whose order depends on the collation: List
// sorts them by bytes on both backends, whatever the database's locale.
func TestListOrder(t *testing.T) {
	names := []string{"b", "B", "a", "A b", "Ab", "_x", "a-b", "ab"}
	want := []string{"A b", "Ab", "B", "_x", "a", "a-b", "ab", "b"}
	check := func(t *testing.T, st *Store) {
		t.Helper()
		for _, n := range names {
			openSession(t, st, n)
		}
		infos, err := st.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, i := range infos {
			got = append(got, i.Name)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("List (-want +got):\n%s", diff)
		}
	}
	t.Run("sqlite", func(t *testing.T) { check(t, openStore(t, sqliteDSN(t))) })
	t.Run("postgres en-US", func(t *testing.T) {
		dsn := postgresDSNWith(t, "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'")
		check(t, openStore(t, dsn))
	})
}

// TestInvalidUTF8 stores messages holding invalid UTF-8, which the codec
// turns into U+FFFD, and summaries holding NUL bytes and invalid UTF-8:
// Replace with the caller's own copies of the messages (as the agent passes
// them) recognises the stored ones, both backends store the summary, and
// replacing with the same history again records nothing.
func TestInvalidUTF8(t *testing.T) {
	msgs := []processor.Message{
		processor.UserMessage("read caf\xe9.txt"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "cat", Args: `{"path":"caf\xe9.txt"}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "cat", Content: "\xff\xfe binary \x00"}),
		processor.TextMessage("It is binary: \xff."),
		processor.UserMessage("next"),
	}
	tests := []struct {
		name string
		next []processor.Message
		want Compaction // Time and Inserted ignored
	}{
		{
			name: "kept messages",
			next: []processor.Message{msgs[0], processor.UserMessage("summary"), msgs[3], msgs[4]},
			want: Compaction{ID: 1, Covered: []int64{2, 3}, Summary: "summary", After: 5},
		},
		{
			name: "summary",
			next: []processor.Message{msgs[0], processor.UserMessage("a binary \x00 file, caf\xe9\xff"), msgs[4]},
			want: Compaction{ID: 1, Covered: []int64{2, 3, 4}, Summary: "a binary \uFFFD file, caf\uFFFD\uFFFD", After: 5},
		},
	}
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		st := openStore(t, newDSN(t))
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := openSession(t, st, tt.name)
				if err := s.Append(ctx, msgs...); err != nil {
					t.Fatal(err)
				}
				for range 2 {
					if err := s.Replace(ctx, tt.next); err != nil {
						t.Fatal(err)
					}
				}
				got := compactions(t, s)
				if len(got) == 1 && len(got[0].Inserted) != 1 {
					t.Errorf("%d messages inserted, want only the summary", len(got[0].Inserted))
				}
				if diff := cmp.Diff([]Compaction{tt.want}, got, eq, ignoreTime, cmpopts.IgnoreFields(Compaction{}, "Inserted")); diff != "" {
					t.Errorf("compactions (-want +got):\n%s", diff)
				}
			})
		}
	})
}
