// Package abridge keeps LLM agents inside their model's context window.
// Before every model request, an agent built on it runs an ordered chain of
// history processors over its message history: see package processor for
// the message model and the processor contract, processors/trimtools and
// processors/window for the built-in processors, agent for the loop that
// runs them, compact for on-demand compaction, transcript for saved
// conversations, config for configuration from the environment, and
// cmd/abridge for the CLI.
//
// This package itself holds only the real agent transcripts shipped with
// abridge ([Transcripts]), which the CLI's replay runs on when it is given
// no files.
package abridge

import (
	"embed"
	"io/fs"
)

//go:embed testdata/transcripts/*.json
var transcripts embed.FS

// Transcripts returns the real agent conversations shipped in
// testdata/transcripts (their provenance is in testdata/README.md), as
// OpenAI Chat Completions JSON files at the root of the file system, in
// the form transcript.Load reads, and their names, sorted.
func Transcripts() (fs.FS, []string) {
	sub, err := fs.Sub(transcripts, "testdata/transcripts")
	if err != nil {
		// Sub fails only on an invalid path, and this one is fixed.
		panic(err)
	}
	names, err := fs.Glob(sub, "*.json")
	if err != nil {
		// Glob fails only on a malformed pattern, and this one is fixed.
		panic(err)
	}
	return sub, names
}
