package replay

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/abridge-go/abridge/cmd/abridge/internal/chart"
	"github.com/abridge-go/abridge/cmd/abridge/internal/replay/internal/fidelity"
	"github.com/abridge-go/abridge/receipt"
)

//go:embed report.html
var reportHTML string

var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":  func(n int) string { return chart.GroupDigits(int64(n)) },
	"join": strings.Join,
	"inc":  func(i int) int { return i + 1 },
}).Parse(reportHTML))

// Terms explains the words of the replay's tables, as `abridge replay
// --help` and the HTML report give them.
var Terms = []Term{
	{"mode", "How the host keeps its history. processed: the processed history replaces the stored one (an agent that keeps what it sent); " +
		"full: the full history is kept and processed whole before every request; fresh: the full history is decoded from a request's JSON " +
		"before every request, as a proxy sees it."},
	{"without → with", "The prompt of each request without abridge (the transcript up to that request) and with it (what abridge sends), " +
		"in tokens estimated at about 4 characters a token and 4 a message, or in characters."},
	{"compactions", "Requests that sent a new summary marker: the window replaced the middle of the history with a summary."},
	{"cache reuse", "The share of the requests' bytes (their OpenAI JSON) that repeat the previous request's start: what a provider's " +
		"prompt cache can serve. Its ceiling is the most the compaction points allow."},
	{"billed tokens, cached 10% / 25%", "The input tokens billed per request when the provider bills cached input at 10% of the full price " +
		"(GPT-5 class) or 25% (GPT-4.1 class): each request's estimated prompt tokens, the share its cache reuse covers at the cached " +
		"price and the rest at the full price, plus what the summarizer was given at the full price."},
	{"needed kept", "Of the distinctive tokens (file paths, qualified names, identifiers, numbers of 4 digits or more, quoted strings) each " +
		"reply of the transcript went on to use and that occurred earlier in the conversation, the share its request still showed. " +
		"1.000 means nothing the reply used was lost."},
	{"far", fmt.Sprintf("needed kept counted only over the tokens last seen more than %d messages before the reply, where compaction acts.",
		fidelity.FarMessages)},
	{"naive baseline", "What a summarizer would be given if every compaction summarized everything outside the head and the tail again, " +
		"as the transcript holds it, over the transcripts' size: abridge's own summarizer input is shown beside it."},
	{"summarizer input ÷ size", "The characters the summarizer was given over the transcripts' characters: about 1 means each message " +
		"was summarized about once."},
	{"fallback", "A summary the offline digest wrote because the summarizer's could not be used (its reason is given)."},
	{"waited", "Requests that waited for a summary, in the replay's virtual time (--turn between requests, --summary-latency a " +
		"summary): the window writes each summary ahead, in the background, a few requests before its compaction is due, so a " +
		"request waits only when the history is past the hard limits and its summary is still being written."},
	{"deferred", "Requests that went out uncompacted, billed in full, because the summary their compaction needed was still being " +
		"written; the compaction comes with the first request after it is ready."},
	{"wasted", "The share of the summarizer's input spent on summaries written ahead that no compaction used: the conversation " +
		"ended before, or was compacted otherwise."},
}

// Term is a word of the replay's tables and what it means.
type Term struct {
	// Name is the word as the tables print it.
	Name string
	// About says what it means.
	About string
}

// columnAbout explains each column of the wide table, by its heading.
var columnAbout = map[string]string{
	"messages":                              "Messages in the transcript.",
	"requests":                              "Requests replayed: one before each assistant message that follows a request.",
	"compactions":                           "Requests that sent a new summary marker.",
	"summarizer calls":                      "Calls of the window's summarizer.",
	"requests waited":                       "Requests that waited for a summary (virtual time: --turn between requests, --summary-latency a summary).",
	"requests deferred":                     "Requests sent uncompacted because their compaction's summary was still being written.",
	"summarizer input wasted":               "The share of the summarizer's input spent on summaries written ahead and never used.",
	"fallback calls":                        "Calls of the fallback (the offline digest), when the summarizer's summary could not be used.",
	"summarizer input ÷ size":               "What the summarizer was given, in characters, over the transcript's characters (about 1: each message summarized about once).",
	"largest prompt tokens without → with":  "The largest request's estimated prompt tokens without abridge and with it.",
	"mean prompt tokens without → with":     "The mean request's estimated prompt tokens without abridge and with it.",
	"mean prompt characters without → with": "The mean request's characters without abridge and with it.",
	"mean prompt reduction":                 "How much smaller the mean prompt is with abridge, in characters.",
	"cache reuse":                           "The share of the requests' JSON bytes that repeat the previous request's start (what a prompt cache can serve).",
	"cache reuse ceiling":                   "The most cache reuse these compaction points allow; the gap to cache reuse is what a trimmer or summarizer could win back.",
	"billed tokens cached 10% / 25%":        "Input tokens billed per request when cached input costs 10% / 25% of the full price, the summarizer's input included.",
	"processor µs per request":              "The trimmer's and the window's wall time per request, the summarizer's own time left out.",
	"processor CPU µs per request":          "The same as CPU time of the replaying thread (Linux), which other load does not inflate.",
	"file paths kept":                       "Of the file paths named by the messages compacted so far, the share each new summary names.",
	"written paths kept":                    "The same for the paths those messages wrote (edited, created, moved to).",
	"needed tokens kept":                    "Of the distinctive tokens each reply used from earlier messages, the share its request still showed.",
	"far needed tokens kept":                "The same for the tokens last seen more than 20 messages back.",
	"invalid requests":                      "Requests the processors failed on or that would not have been valid to send (must be 0).",
}

// heading is a column's heading in one line.
func (c column) heading() string { return strings.TrimSpace(c.top + " " + c.bottom) }

// WriteHTML writes the report as one self-contained HTML page that opens
// offline in any browser: the settings, the figures table with every
// column explained, the terms, and for each transcript a chart of its
// estimated prompt tokens per request with and without abridge and the
// receipt of each compaction (the marker as sent, what it replaced, who
// wrote it); the receipts are there when the replay kept them
// (Options.Receipts). Every text from the transcripts is escaped, and the
// page allows no script.
func (r *Report) WriteHTML(w io.Writer) error {
	type col struct{ Heading, About string }
	type transcript struct {
		Name     string
		Result   Result
		Chart    template.HTML
		Receipts []receipt.Receipt
		Markers  []string
	}
	data := struct {
		Settings    string
		Columns     []col
		Rows        [][]string
		Terms       []Term
		Transcripts []transcript
		Receipts    bool
	}{Settings: strings.Join(r.Options.describe(), ", "), Terms: Terms}
	for _, c := range wideColumns {
		data.Columns = append(data.Columns, col{c.heading(), columnAbout[c.heading()]})
	}
	for i, x := range append(r.Results, r.Total) {
		name := baseName(x.File)
		if i == len(r.Results) {
			name = "total"
		}
		row := []string{name}
		for _, c := range wideColumns {
			row = append(row, c.cell(x))
		}
		data.Rows = append(data.Rows, row)
	}
	for _, x := range r.Results {
		t := transcript{Name: x.File, Result: x, Receipts: x.Receipts}
		data.Receipts = data.Receipts || x.Receipts != nil
		var before, after []float64
		var marks []int
		for _, p := range x.Series {
			before, after = append(before, float64(p.TokensBefore)), append(after, float64(p.TokensAfter))
			if p.Compaction {
				marks = append(marks, p.Request)
			}
		}
		t.Chart = chart.Chart{Title: "estimated prompt tokens per request of " + DisplayName(x.File), XLabel: "request", YLabel: "prompt tokens",
			Series: []chart.Series{
				{Name: "without abridge", Values: before, Color: "#7f7f7f", Dashed: true},
				{Name: "with abridge", Values: after, Color: "#1f77b4"},
			}, Marks: marks, MarkName: "compaction", Width: 960, Height: 260}.SVG()
		for _, rc := range x.Receipts {
			t.Markers = append(t.Markers, rc.Marker())
		}
		data.Transcripts = append(data.Transcripts, t)
	}
	return reportPage.Execute(w, data)
}
