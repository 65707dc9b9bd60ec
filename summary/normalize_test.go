package summary

import "testing"

// TestNormalized checks normalized against normalize on the strings each
// of normalize's rules changes, and on ones it leaves.
func TestNormalized(t *testing.T) {
	for _, s := range []string{
		"", "a", "Goal: fix it.\nStatus: done.", "naïve \uFFFD", // left as they are
		" a", "a\n", "\ta", "a\u00a0", // white space at an end
		"a\r\nb", "a\x00b", "a\xffb", "\xe2\x82", // a line end, NUL, invalid UTF-8
		"a\rb", // a lone "\r" stays
	} {
		if got, want := normalized(s), normalize(s) == s; got != want {
			t.Errorf("normalized(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzNormalized checks that normalized tells exactly whether normalize
// leaves a string as it is.
func FuzzNormalized(f *testing.F) {
	for _, s := range []string{"", " a", "a\r\nb", "a\x00", "\xff", "Summary."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := normalized(s), normalize(s) == s; got != want {
			t.Errorf("normalized(%q) = %v, want %v", s, got, want)
		}
	})
}
