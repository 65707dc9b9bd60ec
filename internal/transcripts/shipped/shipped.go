// Package shipped holds the real agent transcripts shipped with abridge,
// embedded, so that "abridge replay" without files runs from an installed
// binary anywhere, and tests have real histories without the shared set.
// README.md beside them gives their provenance.
package shipped

import (
	"embed"
	"io/fs"
)

//go:embed *.json
var files embed.FS

// FS returns the shipped transcripts: OpenAI Chat Completions JSON files
// at its root, as [github.com/abridge-go/abridge/model.Load] reads them.
func FS() fs.FS { return files }

// Names returns the names of the shipped transcripts in FS, sorted.
func Names() []string {
	names, err := fs.Glob(files, "*.json")
	if err != nil {
		// Glob fails only on a malformed pattern, and this one is fixed.
		return nil
	}
	return names
}
