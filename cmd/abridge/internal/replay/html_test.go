package replay

import (
	"bytes"
	"context"
	"html"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	abridge "github.com/abridge-go/abridge"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// TestReceiptsKeepFigures replays the shipped transcripts with and without
// receipts: the figures are the same (times aside), and each compaction
// has its receipt, numbered by its request, its marker the summary's.
func TestReceiptsKeepFigures(t *testing.T) {
	fsys, names := abridge.Transcripts()
	ctx := context.Background()
	plain, err := RunFS(ctx, fsys, names, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := RunFS(ctx, fsys, names, Options{Receipts: true})
	if err != nil {
		t.Fatal(err)
	}
	times := cmpopts.IgnoreFields(Result{}, "ProcessorTime", "PerRequest", "ProcessorCPU", "PerRequestCPU", "DecodeTime", "DecodeCPU",
		"PerRequestDecodeCPU", "SummarizerTime", "Receipts")
	if diff := cmp.Diff(plain.Results, kept.Results, times, cmpopts.IgnoreUnexported(Result{})); diff != "" {
		t.Errorf("figures with receipts (-without +with):\n%s", diff)
	}
	total := 0
	for _, x := range kept.Results {
		if len(x.Receipts) != x.Compactions {
			t.Errorf("%s: %d receipts for %d compactions", x.File, len(x.Receipts), x.Compactions)
		}
		for _, r := range x.Receipts {
			if r.Conversation != x.File || r.Request < 1 || r.Request > x.Requests || !x.Series[r.Request-1].Compaction {
				t.Errorf("%s: receipt of request %d (a compaction: %v)", x.File, r.Request, r.Request >= 1 && x.Series[r.Request-1].Compaction)
			}
			if s, _, ok := summary.ParseMarker(processor.UserMessage(r.Marker())); !ok || r.Writer != "digest" || len(r.Replaced) == 0 ||
				s != strings.TrimSpace(r.Summary) {
				t.Errorf("%s: receipt %+v", x.File, r)
			}
		}
		total += len(x.Receipts)
	}
	if total == 0 {
		t.Fatal("no receipt: the shipped transcripts compact")
	}
}

// TestWriteHTML writes the report of the shipped transcripts: every
// column is explained, every term, each transcript has its chart, each
// compaction its marker, the transcripts' names are whole, and the page
// has no script.
func TestWriteHTML(t *testing.T) {
	fsys, names := abridge.Transcripts()
	rep, err := RunFS(context.Background(), fsys, names, Options{Receipts: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, c := range wideColumns {
		if columnAbout[c.heading()] == "" {
			t.Errorf("column %q is not explained", c.heading())
		}
	}
	for _, term := range Terms {
		if !strings.Contains(page, "<dt>"+html.EscapeString(term.Name)+"</dt>") {
			t.Errorf("the term %q is not explained", term.Name)
		}
	}
	if n := strings.Count(page, "<svg"); n != len(rep.Results) {
		t.Errorf("%d charts for %d transcripts", n, len(rep.Results))
	}
	for _, x := range rep.Results {
		if !strings.Contains(page, "<h3>"+html.EscapeString(x.File)+"</h3>") {
			t.Errorf("the transcript %s is not named whole", x.File)
		}
		for _, r := range x.Receipts {
			if !strings.Contains(page, html.EscapeString(r.Marker())) {
				t.Errorf("%s: the marker of request %d is not shown", x.File, r.Request)
			}
		}
	}
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Errorf("the report holds a script")
	}
}
