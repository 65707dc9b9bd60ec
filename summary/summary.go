// Package summary holds what abridge's summaries are made of, apart from
// any model: the marker that carries a summary in a history ([Marker],
// [ParseMarker]), the offline digest that summarizes without a model
// ([Digest]), the facts section kept verbatim beside a summary's prose
// ([Facts]), the file paths a history wrote and mentioned ([Paths]), the
// placeholder of a cleared tool output ([Placeholder]), and the one error
// every summarizer reports for an empty summary ([ErrEmpty]). Tool-call
// arguments are read with encoding/json and shell commands with a Bash
// parser (mvdan.cc/sh/v3/syntax). It depends on package processor only,
// so the window, the on-demand compaction and the LLM summarizer share it
// without depending on each other.
package summary

import "errors"

// ErrEmpty is the error for a summary that holds nothing but white space,
// whoever wrote it: the LLM summarizer returns it, the window reports it
// in its events, and compact returns it.
var ErrEmpty = errors.New("empty summary")
