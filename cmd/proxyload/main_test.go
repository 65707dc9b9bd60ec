package main

import (
	"bytes"
	"io"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/testkit/openaitest"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

// TestRun runs a small load, and checks the report: no errors, every
// request forwarded, the rows of figures, those of the requests replayed
// alone included.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-conversations", "3", "-messages", "50"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	report := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^3 conversations of up to 50 messages`),
		regexp.MustCompile(`(?m)^(\d+) requests in [\d.]+ s \(\d+ a second\), 0 errors, (\d+) forwarded, [1-9]\d* summaries$`),
		regexp.MustCompile(`(?m)^upstream's own time +[\d.]+ ms +[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^added by the proxy .* +-?[\d.]+ ms +-?[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^  of which abridge's processing +[\d.]+ ms +[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^added, requests that waited for no summary +-?[\d.]+ ms +-?[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^encoding/json decode of the same bodies +[\d.]+ ms +[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^  into openai.ChatCompletionNewParams +[\d.]+ ms +[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^p99 ÷ p99 openai-go decode: added [\d.]+, without summary waits [\d.]+, abridge's processing without summary waits [\d.]+$`),
		regexp.MustCompile(`(?m)^summaries: \d+ requests waited for one \(p99 of those [\d.]+ ms\), \d+ added over 1 s; \d+ went out uncompacted while theirs was written; \d+ written ahead, \d+ of them or of those to be abandoned unused$`),
		regexp.MustCompile(`(?m)^where the added time went `),
		regexp.MustCompile(`(?m)^  client → proxy's handler +[\d.]+ ms +[\d.]+ ms +[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^  proxy's handler → body processed +[\d.]+ ms +[\d.]+ ms +[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^  body processed → upstream's handler +[\d.]+ ms +[\d.]+ ms +[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^  the rest: the answer's way back +-?[\d.]+ ms +-?[\d.]+ ms +-?[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^each request again, alone \(least of 3 passes; \d+ requests that wrote no summary\):$`),
		regexp.MustCompile(`(?m)^alone, processing ÷ decode: p50 [\d.]+, p99 [\d.]+, all requests [\d.]+ \(budget ≤ 1\)$`),
	} {
		if !want.MatchString(report) {
			t.Errorf("report lacks %s:\n%s", want, report)
		}
	}
	m := regexp.MustCompile(`(?m)^(\d+) requests in .*, (\d+) forwarded`).FindStringSubmatch(report)
	if m == nil || m[1] != m[2] {
		t.Errorf("requests and forwarded differ: %v", m)
	}
}

// TestRunBare runs the same load through a reverse proxy without abridge:
// nothing is summarized, and abridge's rows are left out.
func TestRunBare(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-conversations", "2", "-messages", "40", "-bare"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	report := out.String()
	if !regexp.MustCompile(`(?m)^\d+ requests in .*, 0 errors, \d+ forwarded, 0 summaries$`).MatchString(report) {
		t.Errorf("report: want no errors and no summaries:\n%s", report)
	}
	if strings.Contains(report, "abridge's processing ") || !strings.Contains(report, "without abridge (-bare)") {
		t.Errorf("report of a bare run:\n%s", report)
	}
	// No body processed: the proxy's part of the way is one.
	if !regexp.MustCompile(`(?m)^  proxy's handler → upstream's handler +[\d.]+ ms +[\d.]+ ms +[\d.]+ ms$`).MatchString(report) ||
		strings.Contains(report, "body processed") {
		t.Errorf("breakdown of a bare run:\n%s", report)
	}
}

// TestRunBareDecode runs a small load through a reverse proxy that
// decodes each body before forwarding it: every request forwarded, and
// the decode a step of its own in the breakdown. -decode alone is refused.
func TestRunBareDecode(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-conversations", "2", "-messages", "40", "-bare", "-decode", "jsonv2"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	report := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)through a reverse proxy without abridge that decodes each body first \(-bare -decode jsonv2\)`),
		regexp.MustCompile(`(?m)^(\d+) requests in .*, 0 errors, (\d+) forwarded, 0 summaries$`),
		regexp.MustCompile(`(?m)^  proxy's handler → body processed +[\d.]+ ms +[\d.]+ ms +[\d.]+ ms$`),
		regexp.MustCompile(`(?m)^  body processed → upstream's handler +[\d.]+ ms +[\d.]+ ms +[\d.]+ ms$`),
	} {
		if !want.MatchString(report) {
			t.Errorf("report lacks %s:\n%s", want, report)
		}
	}
	if m := regexp.MustCompile(`(?m)^(\d+) requests in .*, (\d+) forwarded`).FindStringSubmatch(report); m == nil || m[1] != m[2] {
		t.Errorf("want every request forwarded:\n%s", report)
	}
	for _, tc := range []struct{ args, want string }{
		{"-decode json", "-decode goes with -bare"},
		{"-bare -decode yaml", `-decode "yaml": want json or jsonv2`},
	} {
		err := run(append([]string{"-conversations", "1"}, strings.Fields(tc.args)...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%s) = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestRunAPIs runs a small load of each API through abridge's proxy and
// through a bare one: no errors, every request forwarded, the report
// naming the API and, where openai-go has a request type, its decode.
func TestRunAPIs(t *testing.T) {
	for _, tc := range []struct {
		api, name, params string
	}{
		{"responses", "Responses API", "responses.ResponseNewParams"},
		{"messages", "Anthropic Messages", ""},
	} {
		for _, bare := range []bool{false, true} {
			args := []string{"-conversations", "2", "-messages", "40", "-api", tc.api}
			if bare {
				args = append(args, "-bare")
			}
			var out bytes.Buffer
			if err := run(args, &out); err != nil {
				t.Fatalf("run(%q): %v\n%s", args, err, out.String())
			}
			report := out.String()
			m := regexp.MustCompile(`(?m)^(\d+) requests in .*, 0 errors, (\d+) forwarded`).FindStringSubmatch(report)
			if !strings.Contains(report, " as "+tc.name+" requests through ") || m == nil || m[1] != m[2] {
				t.Errorf("run(%q): want %s requests, no errors, all forwarded:\n%s", args, tc.name, report)
			}
			if typed := strings.Contains(report, "  into "); typed != (tc.params != "") || !strings.Contains(report, tc.params) {
				t.Errorf("run(%q): want a decode row into %q:\n%s", args, tc.params, report)
			}
		}
	}
}

func TestRunUsage(t *testing.T) {
	tests := [][]string{{"-conversations", "0"}, {"-messages", "2"}, {"-ramp", "-1s"}, {"-bogus"}, {"-api", "completions"}}
	for _, args := range tests {
		var out bytes.Buffer
		if err := run(args, &out); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}

// TestRuns replays the conversations twice through one proxy and reports
// the memory after each run.
func TestRuns(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-conversations", "2", "-messages", "30", "-runs", "2"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^2 runs, the figures below over all of them$`),
		regexp.MustCompile(`(?m)^after run 1: heap in use \d+ MiB`),
		regexp.MustCompile(`(?m)^after run 2: heap in use \d+ MiB`),
		regexp.MustCompile(`(?m)^\d+ requests in .*, 0 errors,`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("report lacks %s:\n%s", want, out.String())
		}
	}
}

// TestStalled runs a small stalled-body attack: every connection is
// answered, 408 at the body deadline, and the report says so.
func TestStalled(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-stalled", "3", "-stalled-mb", "2", "-stalled-timeout", "500ms"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !regexp.MustCompile(`(?m)^answers: 3 × 408; the last after [\d.]+ s$`).MatchString(out.String()) {
		t.Errorf("report:\n%s", out.String())
	}
}

// BenchmarkAlone replays every request of the shared transcripts (the
// load command's conversations, one per transcript, as each API) alone
// through the middleware on the load command's chain, after a first pass
// that fills the window's summaries, and times encoding/json decoding each body into a generic value beside it.
// It reports abridge's processing over the decode, summed over all
// requests (proc/decode) and at p99 (proc/decode-p99), the least time of
// each request over the iterations; the budget is 1 (processing a
// request takes no longer than decoding it). Without the shared
// transcripts it says so and runs on the shipped ones.
func BenchmarkAlone(b *testing.B) { benchAlone(b, false) }

// BenchmarkAloneSecondMiddleware is BenchmarkAlone with the requests
// replayed through a second middleware on the same chain after the first
// pass, as the load command's own replay does after its run. Every
// middleware decodes each request's messages anew, so it measures what
// BenchmarkAlone does; it stays to compare with figures taken before.
func BenchmarkAloneSecondMiddleware(b *testing.B) { benchAlone(b, true) }

func benchAlone(b *testing.B, second bool) {
	var files []string
	if dir, ok := transcripts.SharedDir(); ok {
		files, _ = filepath.Glob(filepath.Join(dir, "*.json"))
	} else {
		b.Logf("shared transcripts not found at %s (set %s): running on the shipped ones", dir, transcripts.EnvDir)
	}
	if len(files) == 0 {
		files = transcripts.Shipped(b)
	}
	slices.Sort(files)
	convs, err := fromFiles(files, len(files), 120)
	if err != nil {
		b.Fatal(err)
	}
	up := httptest.NewServer(&openaitest.Upstream{Discard: true})
	defer up.Close()
	for _, api := range []string{openaitest.APIChat, openaitest.APIResponses, openaitest.APIMessages} {
		b.Run(api, func(b *testing.B) {
			bodies := make([]*openaitest.Bodies, len(convs))
			for c, msgs := range convs {
				if bodies[c], err = openaitest.NewBodies(api, msgs); err != nil {
					b.Fatal(err)
				}
			}
			chain, _, err := newChain(config.Default(), up.URL, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			r := newReplayer(chain, api, convs, bodies)
			if err := r.pass(); err != nil { // summaries written
				b.Fatal(err)
			}
			if second {
				r = newReplayer(chain, api, convs, bodies)
				if err := r.pass(); err != nil { // through a second middleware
					b.Fatal(err)
				}
			}
			r.least = nil
			for b.Loop() {
				if err := r.pass(); err != nil {
					b.Fatal(err)
				}
			}
			res := r.result()
			var proc, dec time.Duration
			for i := range res.processing {
				proc += res.processing[i]
				dec += res.decode[i]
			}
			b.ReportMetric(ratio(proc, dec), "proc/decode")
			b.ReportMetric(ratio(percentile(res.processing, 99), percentile(res.decode, 99)), "proc/decode-p99")
		})
	}
}
