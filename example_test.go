package abridge_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/abridge-go/abridge"
)

// The shipped transcripts are files of OpenAI Chat Completions JSON, as
// transcript.Load reads them.
func ExampleTranscripts() {
	fsys, names := abridge.Transcripts()
	data, err := fsys.Open(names[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	defer data.Close()
	fmt.Println(len(names), "transcripts; the first:", names[0])
	// Output:
	// 5 transcripts; the first: claudecode-spotter__6c2214d7-b87e-4432-8e41-22ba294ea584__subagent-agent-afc096d.jsonl.json
}

// TestEveryPackageHasExamples checks the claim of docs/development.md that every public
// package has runnable examples: an example_test.go with at least one
// example whose output is checked. The test support under testkit/ is the
// project's own, not API for users, and is left out.
func TestEveryPackageHasExamples(t *testing.T) {
	for _, p := range listPublic(t) {
		data, err := os.ReadFile(filepath.Join(p.dir, "example_test.go"))
		if err != nil || !bytes.Contains(data, []byte("// Output:")) {
			t.Errorf("package %s has no example_test.go with a checked example (// Output:)", p.name)
		}
	}
}
