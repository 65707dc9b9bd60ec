package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/abridge-go/abridge/processor"
)

// Save writes history as an indented JSON object {"messages": [...]} of
// OpenAI Chat Completions messages, written as [ToRawMessages] writes
// them, which [Load] reads back into the same history, less what the
// format cannot hold (Usage, ModelName, FinishReason, Time, the Signature
// and Raw of Thinking parts) and with a response's Thinking parts merged
// into one, its first part.
//
// Its errors are those of ToRawMessages; nothing is written then.
func Save(w io.Writer, history []processor.Message) error {
	raws, err := ToRawMessages(history)
	if err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	doc := append(append([]byte(`{"messages":`), JoinRawMessages(raws)...), '}')
	var buf bytes.Buffer
	if err := json.Indent(&buf, doc, "", "  "); err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	buf.WriteByte('\n')
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	return nil
}

// SaveFile writes history to the file at path, as [Save] does. It writes a
// temporary file beside path and renames it, so a failed save leaves an
// existing file intact. Its errors name the file.
func SaveFile(path string, history []processor.Message) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("save history %s: %w", path, err)
	}
	tmp := f.Name()
	err = Save(f, history)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("save history %s: %w", path, err)
	}
	return nil
}
