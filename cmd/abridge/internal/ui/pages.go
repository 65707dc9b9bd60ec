package ui

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/cmd/abridge/internal/chart"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/receipt"
)

//go:embed page.html
var pageHTML string

var pages = template.Must(template.New("page").Funcs(template.FuncMap{
	"num":     num,
	"short":   func(id string) string { return id[:min(len(id), 8)] },
	"ago":     ago,
	"stamp":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"seconds": func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s" },
	"preview": func(s string) string { return processor.Preview(s, 160) },
	"reason":  Reason,
	"join":    strings.Join,
	"inc":     func(i int) int { return i + 1 },
}).Parse(pageHTML))

// view is what the page template renders: the layout's fields and one of
// the pages' data.
type view struct {
	Title   string
	Nonce   string
	Version string
	// One of these is set.
	List         *listView
	Conversation *conversationView
	Receipt      *receiptView
	Missing      string
}

type listView struct {
	Conversations []receipt.Conversation
	Now           time.Time
}

type conversationView struct {
	C        receipt.Conversation
	Requests []requestRow
	Receipts []receipt.Receipt
	Chart    template.HTML
	Reported int // requests with the provider's usage
}

// requestRow is a request and its number in the conversation.
type requestRow struct {
	receipt.Request
	N int
}

type receiptView struct {
	R      receipt.Receipt
	Marker string
}

// page wraps a page: fn fills v (its title and one page's data, or
// Missing), and the layout is rendered with a fresh nonce.
func (h *handler) page(fn func(r *http.Request, v *view) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := &view{Nonce: newNonce()}
		var err error
		if v.Version, err = h.src.Version(r.Context()); err == nil {
			err = fn(r, v)
		}
		status := http.StatusOK
		switch {
		case err != nil:
			h.log.Warn("ui: source failed", zap.String("path", r.URL.Path), zap.Error(err))
			status, v.Title, v.Missing = http.StatusInternalServerError, "error", "The session store failed; the proxy's log says why."
			v.List, v.Conversation, v.Receipt = nil, nil, nil
		case v.Missing != "":
			status = http.StatusNotFound
		}
		var buf bytes.Buffer
		if err := pages.Execute(&buf, v); err != nil {
			h.log.Warn("ui: page not rendered", zap.Error(err))
			http.Error(w, "abridge: page not rendered", http.StatusInternalServerError)
			return
		}
		secure(w.Header(), v.Nonce)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write(buf.Bytes())
	}
}

func (h *handler) conversations(r *http.Request, v *view) error {
	cs, err := h.src.Conversations(r.Context())
	v.Title, v.List = "conversations", &listView{Conversations: cs, Now: time.Now()}
	return err
}

func (h *handler) conversation(r *http.Request, v *view) error {
	id := r.PathValue("id")
	v.Title = "conversation " + id
	if !receipt.ValidID(id) {
		v.Missing = "No conversation has this id."
		return nil
	}
	c, reqs, rcpts, found, err := h.src.Conversation(r.Context(), id)
	if err != nil || !found {
		v.Missing = "No request of this conversation is recorded (or it was forgotten: records are kept for 30 days)."
		return err
	}
	cv := &conversationView{C: c, Receipts: rcpts}
	with, without := make([]float64, len(reqs)), make([]float64, len(reqs))
	var marks []int
	for i, q := range reqs {
		w, wo, reported := q.Prompt()
		if reported {
			cv.Reported++
		}
		with[i], without[i] = float64(w), float64(wo)
		if q.Compacted {
			marks = append(marks, i+1)
		}
		cv.Requests = append(cv.Requests, requestRow{Request: q, N: i + 1})
	}
	cv.Chart = chart.Chart{Title: "prompt tokens per request, with and without abridge", XLabel: "request", YLabel: "prompt tokens",
		Series: []chart.Series{
			{Name: "without abridge", Values: without, Color: "#7f7f7f", Dashed: true},
			{Name: "with abridge", Values: with, Color: "#1f77b4"},
		}, Marks: marks, MarkName: "compaction", Width: 960, Height: 280}.SVG()
	v.Conversation = cv
	return nil
}

func (h *handler) receipt(r *http.Request, v *view) error {
	id := r.PathValue("id")
	v.Title = "receipt " + id
	if !receipt.ValidID(id) {
		v.Missing = "No receipt has this id."
		return nil
	}
	rc, found, err := h.src.Receipt(r.Context(), id)
	if err != nil || !found {
		v.Missing = "No receipt has this id (or it was forgotten: receipts are kept as long as the summaries)."
		return err
	}
	v.Receipt = &receiptView{R: rc, Marker: rc.Marker()}
	return nil
}

// Reason explains the window's reason for a digest standing in.
func Reason(reason string) string {
	switch reason {
	case "":
		return ""
	case "timeout":
		return "the summarizer's model did not answer in time (ABRIDGE_SUMMARY_TIMEOUT)"
	case "summarizer error":
		return "the summarizer's model call failed (the proxy's log has the error)"
	case "empty summary":
		return "the summarizer's model answered with an empty summary"
	case "summary too large":
		return "the model's summary was not smaller than what it would replace"
	case "circuit open":
		return "the summarizer failed too often in a row and rests for a while"
	case "unpaid":
		return "nobody pays for this request's summary: its credential was not yet accepted by the upstream (ABRIDGE_SERVE_SUMMARIZE_FOR)"
	case "no smaller summary":
		return "no summary could be smaller than what it replaces; the smallest digest was used"
	}
	return reason
}

// num writes an integer with its digits grouped by thousands.
func num(v any) string {
	switch v := v.(type) {
	case int:
		return chart.GroupDigits(int64(v))
	case int64:
		return chart.GroupDigits(v)
	}
	return fmt.Sprint(v)
}

// ago says how long before now t was, roughly.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days ago"
}
