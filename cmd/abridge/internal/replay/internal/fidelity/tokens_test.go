package fidelity

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAppendTokens(t *testing.T) {
	long := strings.Repeat("x", 121)
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"path", "open django/core/files/storage.py now", []string{"django/core/files/storage.py"}},
		{"path outer separators trimmed", "(./src/main.go.)", []string{"src/main.go"}},
		{"path needs a letter", "10.0.0.1 and 2024/11/24", []string{"2024"}},
		{"path needs 4 bytes", "a.b x/y", nil},
		{"dashes alone make no path", "my-long-name", nil},
		{"qualified name", "call os.path.join(a, b)", []string{"os.path.join"}},
		{"qualified name with identifier", "settings.DEBUG_MODE", []string{"settings.DEBUG_MODE", "DEBUG_MODE"}},
		{"path pieces that are identifiers", "src/FileStore/read_all.go", []string{"src/FileStore/read_all.go", "FileStore", "read_all"}},
		{"identifier with underscore", "FILE_UPLOAD_PERMISSIONS = None", []string{"FILE_UPLOAD_PERMISSIONS"}},
		{"leading underscore", "_value_or_setting(x)", []string{"_value_or_setting"}},
		{"inner capital", "class FileSystemStorage:", []string{"FileSystemStorage"}},
		{"camel case", "getUserName()", []string{"getUserName"}},
		{"all capitals", "README THOUGHT", nil},
		{"capital first only", "Django Storage", nil},
		{"identifier too short", "a_b_c ab_cd", nil},
		{"identifier of 6 bytes", "a_b_cd", []string{"a_b_cd"}},
		{"underscores only", "______", nil},
		{"starts with a digit", "2fast_forward 9LivesCat", nil},
		{"identifier pieces split by dashes", "run-test_perms-now", []string{"test_perms"}},
		{"number", "ticket 10914", []string{"10914"}},
		{"number of 4 digits", "port 8080", []string{"8080"}},
		{"short number", "line 307", nil},
		{"number in a path", "logs/2026/run.log", []string{"logs/2026/run.log", "2026"}},
		{"double quotes", `the message "Permission denied" appears`, []string{"Permission denied"}},
		{"backquotes", "run `go test ./...` first", []string{"go test ./..."}},
		{"single quotes", "grep 'no such file' log", []string{"no such file"}},
		{"quote too short", `say "hello" twice`, nil},
		{"quote of 6", `say "hello!" twice`, []string{"hello!"}},
		{"quote of 120 characters", `"` + strings.Repeat("y", 120) + `"`, []string{strings.Repeat("y", 120)}},
		{"quote too long", `"` + long + `"`, nil},
		{"quote counts characters, not bytes", `"éééééé"`, nil},
		{"quote counts characters, with a letter", `"ééééée"`, []string{"ééééée"}},
		{"quote needs a letter", `"12 34 56" "!!!!!!"`, nil},
		{"quote stays on its line", "\"one half\nother half\"", nil},
		{"apostrophe opens nothing", "it's here and it's there", nil},
		{"apostrophe inside single quotes", "'don't do that' he said", []string{"don't do that"}},
		{"apostrophe in a word after a quoted string", "'config file' isn't", []string{"config file"}},
		{"pair consumed when too short", `"ab" cdefgh"`, nil},
		{"quoted path", `open("src/lib/util.py")`, []string{"src/lib/util.py", "src/lib/util.py"}},
		{"non-ASCII breaks runs", "naïve_value", []string{"ve_value"}},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendTokens(nil, tc.text)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("AppendTokens(%q) (-want +got):\n%s", tc.text, diff)
			}
		})
	}
}

func TestAppendTokensAppends(t *testing.T) {
	got := AppendTokens([]string{"before"}, "FileSystemStorage")
	if diff := cmp.Diff([]string{"before", "FileSystemStorage"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAppendArgumentTokens(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       []string
	}{
		{"string values", `{"path": "django/core/files/storage.py", "mode": "read_only"}`, []string{"django/core/files/storage.py", "read_only"}},
		{"keys are left out", `{"file_path_name": "x"}`, nil},
		{"numbers", `{"timeout": 30000, "retries": 3}`, []string{"30000"}},
		{"nested", `{"edits": [{"old": "getUserName", "new": "get_user_name"}], "dry_run": true}`, []string{"getUserName", "get_user_name"}},
		{"each value on its own line", `{"a": "'not", "b": "closed'"}`, nil},
		{"a string value", `"FileSystemStorage"`, []string{"FileSystemStorage"}},
		{"not JSON: the raw text", `path=src/main.go FILE_MODE`, []string{"src/main.go", "FILE_MODE"}},
		{"text after the JSON value is left out", `{"a": "first_value"} second_value`, []string{"first_value"}},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendArgumentTokens(nil, tc.args)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("AppendArgumentTokens(%q) (-want +got):\n%s", tc.args, diff)
			}
		})
	}
}

// TestTokensMatchWhole checks that a token is kept only by the same token:
// a part of a path, a truncated path or a longer number is another one.
func TestTokensMatchWhole(t *testing.T) {
	needed := "django/core/files/storage.py 1234 FileSystemStorage"
	for _, tc := range []struct {
		name, sent string
		kept       []string
	}{
		{"the same text", needed, []string{"django/core/files/storage.py", "1234", "FileSystemStorage"}},
		{"the file name alone", "storage.py", nil},
		{"a truncated path", "django/core/fi", nil},
		{"a path cut at its end", "django/core/files/stor", nil},
		{"a longer number", "12345", nil},
		{"a longer identifier", "FileSystemStorageBackend", nil},
		{"inside a longer path", "vendor/django/core/files/storage.py", nil},
		{"within a qualified name", "x.FileSystemStorage", []string{"FileSystemStorage"}},
		{"quoted", `"django/core/files/storage.py"`, []string{"django/core/files/storage.py"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := AppendTokens(nil, tc.sent)
			var kept []string
			for _, tok := range AppendTokens(nil, needed) {
				if slices.Contains(sent, tok) {
					kept = append(kept, tok)
				}
			}
			if diff := cmp.Diff(tc.kept, kept, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("kept by %q (-want +got):\n%s", tc.sent, diff)
			}
		})
	}
}
