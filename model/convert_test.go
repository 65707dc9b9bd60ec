package model

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/internal/transcripts"
)

// originalMessages returns the "messages" array of a transcript file as
// generic JSON.
func originalMessages(t *testing.T, path string) []any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Messages []any `json:"messages"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Messages) == 0 {
		t.Fatalf("%s has no messages", path)
	}
	return doc.Messages
}

// asJSON marshals v and decodes it back as generic JSON.
func asJSON(t *testing.T, v any) []any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkRoundTrip loads a transcript, converts it to openai-go params and
// back, saves it, and checks that every path reproduces the original JSON.
func checkRoundTrip(t *testing.T, path string) {
	want := originalMessages(t, path)
	history, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != len(want) {
		t.Fatalf("loaded %d messages, file has %d", len(history), len(want))
	}
	params, err := ToOpenAI(history)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, asJSON(t, params)); diff != "" {
		t.Errorf("ToOpenAI(LoadFile) differs from the file (-file +converted):\n%s", diff)
	}
	back, err := FromOpenAI(params)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(history, back); diff != "" {
		t.Errorf("FromOpenAI(ToOpenAI(h)) differs from h (-h +back):\n%s", diff)
	}
	var buf bytes.Buffer
	if err := Save(&buf, history); err != nil {
		t.Fatal(err)
	}
	saved := originalMessagesFromBytes(t, buf.Bytes())
	if diff := cmp.Diff(want, saved); diff != "" {
		t.Errorf("Save differs from the file (-file +saved):\n%s", diff)
	}
	reloaded, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(history, reloaded); diff != "" {
		t.Errorf("Load(Save(h)) differs from h (-h +reloaded):\n%s", diff)
	}
}

func originalMessagesFromBytes(t *testing.T, data []byte) []any {
	t.Helper()
	var doc struct {
		Messages []any `json:"messages"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("saved JSON: %v", err)
	}
	return doc.Messages
}

func TestRoundTripShipped(t *testing.T) {
	for _, path := range transcripts.Shipped(t) {
		t.Run(filepath.Base(path), func(t *testing.T) { checkRoundTrip(t, path) })
	}
}

func TestRoundTripShared(t *testing.T) {
	for _, path := range transcripts.Shared(t) {
		t.Run(filepath.Base(path), func(t *testing.T) { checkRoundTrip(t, path) })
	}
}
