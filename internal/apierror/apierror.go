// Package apierror writes errors in the shape the OpenAI API answers them
// with, {"error": {"message", "type", "param", "code"}}, so that a client
// library reports an error of abridge's (a request refused before it left,
// an upstream that could not be reached) as it reports the provider's own,
// and tells the error codes of that shape that mean a context overflow
// ([ContextOverflow]), for the codecs and package model alike.
package apierror

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Error is one API error.
type Error struct {
	// Status is the HTTP status answered.
	Status int `json:"-"`
	// Message says what is wrong, for a person.
	Message string `json:"message"`
	// Type is the error's class, e.g. "invalid_request_error".
	Type string `json:"type"`
	// Param names the request field at fault, or "" for none.
	Param string `json:"param,omitempty"`
	// Code is a stable, machine-readable code, e.g. "invalid_json".
	Code string `json:"code"`
}

// Types of error.
const (
	// TypeInvalidRequest: the client's request is at fault.
	TypeInvalidRequest = "invalid_request_error"
	// TypeUpstream: the upstream could not be reached or did not answer
	// in time.
	TypeUpstream = "upstream_error"
	// TypeServer: abridge failed, or cannot take the request now (it
	// holds as much as it may); the client may try again.
	TypeServer = "server_error"
)

// Body returns the JSON body of e.
func (e Error) Body() []byte {
	data, err := json.Marshal(struct {
		Error Error `json:"error"`
	}{e})
	if err != nil {
		// Only strings are marshalled: unreachable.
		return []byte(`{"error":{"message":"error","type":"api_error","code":"internal"}}`)
	}
	return append(data, '\n')
}

// Write answers e on w.
func (e Error) Write(w http.ResponseWriter) {
	body := e.Body()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// ContextOverflow reports whether code, the code of an OpenAI API error,
// says that the prompt is too long for the model: "context_length_exceeded"
// (the whole prompt) or "string_above_max_length" (one of its strings).
func ContextOverflow(code string) bool {
	return code == "context_length_exceeded" || code == "string_above_max_length"
}
