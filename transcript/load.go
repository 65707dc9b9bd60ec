package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/abridge-go/abridge/processor"
)

// Load reads a history stored as OpenAI Chat Completions JSON: either a bare
// array of messages or an object whose "messages" key holds that array
// (other keys, such as "source", are ignored). Each message becomes one
// [processor.Message], as the package documentation describes.
//
// The decoder is strict about what the message model relies on: malformed
// JSON, a message that is not an object, a missing or unknown role, content
// of the wrong JSON type, a tool message without tool_call_id and an
// assistant tool call without id are errors that name the message's index,
// e.g. "message 12: tool message without tool_call_id". Unknown members of
// a message are ignored (audio, the deprecated function_call, the
// cache_control of text parts), except reasoning_content in an assistant
// message: a non-empty string there becomes a [processor.Thinking] part
// (any other value is ignored). Text arrays in system and developer
// content are joined with newlines; the refusal parts of an assistant's
// content become its refusal when it has none of its own. The JSON of a
// user content part is kept compacted in its Data.
//
// Members are matched by their exact names, as the API matches them: a
// member "Content" is an unknown member, not the content. A message that
// names a member twice is an error: readers differ on which one wins, so
// the history would not mean one thing.
func Load(r io.Reader) ([]processor.Message, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return decodeMessages(data)
}

// LoadFile reads the history stored in the file at path, as [Load] does.
// Its errors name the file.
func LoadFile(path string) ([]processor.Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load history: %w", err)
	}
	defer f.Close()
	h, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("load history %s: %w", path, err)
	}
	return h, nil
}

// decodeMessages reads the top-level value of data and decodes each
// message.
func decodeMessages(data []byte) ([]processor.Message, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, errors.New("empty input: want a JSON array of messages or an object with \"messages\"")
	}
	if err != nil {
		return nil, malformed(data, dec, err)
	}
	var msgs []processor.Message
	switch tok {
	case json.Delim('['):
		if msgs, err = decodeArray(data, dec); err != nil {
			return nil, err
		}
	case json.Delim('{'):
		found := false
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return nil, malformed(data, dec, err)
			}
			if key != "messages" {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return nil, malformed(data, dec, err)
				}
				continue
			}
			tok, err := dec.Token()
			if err != nil {
				return nil, malformed(data, dec, err)
			}
			if tok != json.Delim('[') {
				return nil, errors.New(`"messages" is not an array`)
			}
			if msgs, err = decodeArray(data, dec); err != nil {
				return nil, err
			}
			found = true
		}
		if _, err := dec.Token(); err != nil {
			return nil, malformed(data, dec, err)
		}
		if !found {
			return nil, errors.New(`no "messages" array in the object`)
		}
	default:
		return nil, errors.New("want a JSON array of messages or an object with \"messages\"")
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, malformed(data, dec, err)
		}
		return nil, errors.New("unexpected data after the messages")
	}
	return msgs, nil
}

// decodeArray decodes the messages of an array whose '[' was just read,
// and its closing ']'.
func decodeArray(data []byte, dec *json.Decoder) ([]processor.Message, error) {
	var r reader
	var msgs []processor.Message
	for i := 0; dec.More(); i++ {
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			line, col := position(data, start)
			return nil, &MessageError{Index: i, Reason: fmt.Sprintf("malformed JSON (the message starts near line %d, column %d)", line, col), Err: err}
		}
		// Compacted, so that the Data of user content parts is too.
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, &MessageError{Index: i, Reason: "malformed", Err: err}
		}
		m, err := r.message(i, buf.Bytes())
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	if _, err := dec.Token(); err != nil {
		return nil, malformed(data, dec, err)
	}
	return msgs, nil
}

func malformed(data []byte, dec *json.Decoder, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	line, col := position(data, dec.InputOffset())
	return fmt.Errorf("malformed JSON near line %d, column %d: %w", line, col, err)
}

// position returns the 1-based line and column of a byte offset.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
