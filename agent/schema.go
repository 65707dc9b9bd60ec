package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders schema mismatches in English.
var printer = message.NewPrinter(language.English)

// argSchema checks a tool's arguments against its Parameters.
type argSchema struct {
	schema *jsonschema.Schema
}

// noLoader refuses every URL: a tool's schema is compiled on its own, and a
// $ref out of it is never fetched from the network or read from a file.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %s: only references within the schema itself are followed", url)
}

// compileSchema compiles the Parameters of tool i, or returns nil for a
// tool without any.
func compileSchema(i int, params json.RawMessage) (*argSchema, error) {
	if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("parameters are not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	url := fmt.Sprintf("urn:abridge:tool:%d", i)
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("parameters are not a valid JSON schema: %w", err)
	}
	return &argSchema{schema: s}, nil
}

// check returns nil when args (valid JSON) match the schema, and otherwise
// an error listing each mismatch by its location in the arguments
// ("/path: what is wrong"), separated by "; " and sorted by location and
// then text, so the same arguments always get the same answer (the
// validator reports the mismatches of an object's properties in map order).
func (s *argSchema) check(args json.RawMessage) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return err
	}
	err = s.schema.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			lines = append(lines, fmt.Sprintf("%s: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortFunc(lines, func(a, b string) int {
		la, _, _ := strings.Cut(a, ": ")
		lb, _, _ := strings.Cut(b, ": ")
		if c := strings.Compare(la, lb); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return errors.New(strings.Join(lines, "; "))
}
