// Package logkeys finds the keys a JSON log line repeats: zap writes every
// field it is given, so two fields of one name make an object with a
// repeated key, and a reader that keeps the last loses the first. Tests
// run it over the lines of a JSON log.
package logkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Repeated returns the keys an object of data, one JSON value, repeats, at
// any depth, each as its path from the top ("error", "a.b", "list[].b"),
// in the order they were found; an error when data is not one JSON value.
func Repeated(data []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []string
	if err := walk(dec, "", &out); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return out, nil
}

// Check returns an error naming each line of log, a JSON log, that
// repeats a key or is not one JSON value; nil when there is none.
func Check(log string) error {
	var errs []error
	for line := range strings.Lines(log) {
		repeated, err := Repeated([]byte(line))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("a line is not JSON (%w): %s", err, strings.TrimSpace(line)))
		case len(repeated) > 0:
			errs = append(errs, fmt.Errorf("a line repeats %s: %s", strings.Join(repeated, ", "), strings.TrimSpace(line)))
		}
	}
	return errors.Join(errs...)
}

// walk reads one value from dec, adding to out the paths of the keys its
// objects repeat; path is the value's own.
func walk(dec *json.Decoder, path string, out *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, ok := tok.(string)
			if !ok {
				return fmt.Errorf("object key %v is not a string", tok)
			}
			at := key
			if path != "" {
				at = path + "." + key
			}
			if seen[key] {
				*out = append(*out, at)
			}
			seen[key] = true
			if err := walk(dec, at, out); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if err := walk(dec, path+"[]", out); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = dec.Token() // the closing delimiter
	return err
}
