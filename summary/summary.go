// Package summary holds what abridge's summaries are made of, their format
// apart from whoever writes them: the marker that carries a summary in a
// history ([Marker], [ParseMarker]), the facts section kept verbatim beside
// a summary's prose ([Facts]), the file paths a history wrote and mentioned
// ([Paths]), the placeholder of a cleared tool output ([Placeholder]), the
// text helpers summaries are written with ([Clip], [ClipTexts],
// [ErrorLine], [KeyArg]), and the one error every summarizer reports for an
// empty summary ([ErrEmpty]). The summarizers themselves are in package
// summarizer (the offline digest) and summarizer/llm (the LLM one).
// Tool-call arguments are
// read with encoding/json and shell commands with a Bash parser
// (mvdan.cc/sh/v3/syntax). It depends on package processor only.
package summary

import "errors"

// ErrEmpty is the error for a summary that holds nothing but white space,
// whoever wrote it: the LLM summarizer returns it, the window reports it
// in its events, and compact returns it.
var ErrEmpty = errors.New("empty summary")
