package session

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/abridge-go/abridge/processor"
)

// TestOpenBadDSN opens DSNs that name no SQLite file and no PostgreSQL
// database that answers: each is an error saying why, its password is not
// in it, and nothing is created in the working directory.
func TestOpenBadDSN(t *testing.T) {
	tests := []struct {
		name, dsn, want string
	}{
		{"misspelt scheme", "postgress://abridge:s3cret@localhost/db", `unknown scheme "postgress"`},
		{"other database", "mysql://abridge:s3cret@localhost/db", `unknown scheme "mysql"`},
		{"in-memory", ":memory:", "in-memory"},
		{"in-memory with prefix", "sqlite::memory:", "in-memory"},
		{"SQLite URI", "file:sessions.db", "SQLite URI"},
		{"SQLite URI in memory", "file::memory:?cache=shared", "SQLite URI"},
		// PostgreSQL's keyword/value form, with no server to answer it.
		{"keyword form", "host=127.0.0.1 port=1 user=abridge password=s3cret dbname=db connect_timeout=1", "postgres: connect: failed to connect"},
		{"keyword form, password first", "password=s3cret host=127.0.0.1 port=1 connect_timeout=1", "postgres: connect"},
		{"keyword form, quoted password", "host=127.0.0.1 port=1 password='s3cret x' connect_timeout=1", "postgres: connect"},
		{"keyword form, bad value", "host=127.0.0.1 sslmode=bogus password=s3cret", "postgres: cannot parse"},
	}
	dir := t.TempDir()
	t.Chdir(dir)
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Open(ctx, tt.dsn, nil)
			if err == nil {
				st.Close()
				t.Fatalf("Open(%q): no error", tt.dsn)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open(%q) = %v, want an error saying %q", tt.dsn, err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Open(%q) = %v: the error holds the password", tt.dsn, err)
			}
		})
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	if len(names) != 0 {
		t.Errorf("Open of bad DSNs created %v in the working directory", names)
	}
}

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
	check := func(t *testing.T, st Store) {
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
