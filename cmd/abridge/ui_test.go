package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/abridge-go/abridge/cmd/abridge/internal/replay"
	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/receipt"
	"github.com/abridge-go/abridge/testkit/browsertest"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// envScreenshot, set to 1, makes TestOperatorPage write the screenshot the
// README and docs/serve.md show (docs/operator-page.png); a normal run leaves it as it is.
const envScreenshot = "ABRIDGE_UPDATE_SCREENSHOT"

// hostileText is what a conversation may hold that must stay text on the
// operator's page.
const hostileText = `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">`

// uiConversation is a conversation whose user holds hostile markup.
func uiConversation(n int) []json.RawMessage {
	msgs := openaitest.ToolConversation(n, "the parser")
	msgs[1], _ = json.Marshal(map[string]any{"role": "user", "content": "Make the tests pass. " + hostileText})
	return msgs
}

// chatTo posts the first n messages of msgs to a serve's chat completions
// path with the client's key, and returns the answer's header.
func chatTo(t *testing.T, base string, msgs []json.RawMessage) http.Header {
	t.Helper()
	body, err := json.Marshal(map[string]any{"model": "gpt-test", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	return resp.Header
}

// replayUntil sends the requests of msgs from the request numbered from
// (0 first) on, until an answer names a new compaction; it returns the
// number of the next request and the receipt's path.
func replayUntil(t *testing.T, base string, msgs []json.RawMessage, from int) (int, string) {
	t.Helper()
	lengths := openaitest.RequestLengths(msgs)
	for i := from; i < len(lengths); i++ {
		h := chatTo(t, base, msgs[:lengths[i]])
		if h.Get(proxy.HeaderCompaction) == "new" {
			return i + 1, h.Get(proxy.HeaderReceipt)
		}
	}
	t.Fatalf("no compaction in requests %d to %d", from, len(lengths))
	return 0, ""
}

// uiServe starts abridge serve in front of a fake upstream whose summaries
// hold hostile markup, with env's variables added.
func uiServe(t *testing.T, env map[string]string) (*running, *openaitest.Upstream) {
	t.Helper()
	up := &openaitest.Upstream{Summary: "The agent is fixing the parser; the user wrote " + hostileText}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	e := serveEnv(t, upSrv.URL)
	e["ABRIDGE_SERVE_SUMMARIZE_FOR"] = "all"
	e["ABRIDGE_LOG_LEVEL"] = "info"
	for k, v := range env {
		e[k] = v
	}
	return startServe(t, e), up
}

// TestOperatorPage drives a real Chromium against abridge serve: the list
// shows a conversation once it is compacted, without a reload; the
// conversation's page draws its chart and shows a new compaction as it
// happens, again without a reload; the receipt's page shows the summary
// the model wrote, its <script> as text that never ran; the API key is
// nowhere in what the pages or the API show.
func TestOperatorPage(t *testing.T) {
	srv, up := uiServe(t, nil)
	ui := strings.TrimSuffix(srv.base, "/v1") + "/ui/"
	if !strings.Contains(srv.stderr.String(), "operator's page at "+ui+" (loopback only, no token)") {
		t.Errorf("the start-up line does not name the page:\n%s", srv.stderr.String())
	}
	ctx := browsertest.New(t)
	const wait = time.Minute
	browsertest.Do(t, ctx, wait, chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.CSS("#empty")),
		chromedp.Evaluate[chromedp.Void]("window.stayed = 'list'"))

	msgs := uiConversation(90)
	next, first := replayUntil(t, srv.base, msgs, 0)
	// The list shows the conversation, compacted, in the same document.
	browsertest.Do(t, ctx, wait, chromedp.Poll[chromedp.Void](
		`document.querySelectorAll("tr.conversation").length === 1 && document.querySelector("tr.conversation td:nth-child(4)").textContent === "1"`))
	if got := browsertest.Eval[string](t, ctx, "window.stayed"); got != "list" {
		t.Errorf("the list was reloaded (window.stayed = %q)", got)
	}

	// The conversation's page: its chart, and the next compaction live.
	browsertest.Do(t, ctx, wait, chromedp.Click(chromedp.CSS("tr.conversation a")), chromedp.WaitVisible(chromedp.CSS("svg.chart")),
		chromedp.Evaluate[chromedp.Void]("window.stayed = 'conversation'"))
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll("svg.chart polyline").length`); n != 2 {
		t.Errorf("the chart has %d lines, want 2 (with and without abridge)", n)
	}
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll("tr.receipt").length`); n != 1 {
		t.Errorf("%d compactions shown, want 1", n)
	}
	_, second := replayUntil(t, srv.base, msgs, next)
	if second == first {
		t.Fatalf("the second compaction has the first's receipt %s", first)
	}
	browsertest.Do(t, ctx, wait, chromedp.Poll[chromedp.Void](`document.querySelectorAll("tr.receipt").length === 2`))
	if got := browsertest.Eval[string](t, ctx, "window.stayed"); got != "conversation" {
		t.Errorf("the conversation's page was reloaded (window.stayed = %q)", got)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	checkScreenshot(t, shot)

	// The receipt's page: the summary as text, no script run.
	browsertest.Do(t, ctx, wait, chromedp.Navigate(strings.TrimSuffix(ui, "/ui/")+second), chromedp.WaitVisible(chromedp.CSS("#marker")))
	marker := browsertest.Eval[string](t, ctx, `document.getElementById("marker").textContent`)
	if !strings.Contains(marker, up.Summary) || !strings.HasPrefix(marker, "[abridge: summary of the earlier conversation]") {
		t.Errorf("the marker shown does not hold the summary:\n%s", marker)
	}
	if got := browsertest.Eval[string](t, ctx, `String(window.pwned)`); got != "undefined" {
		t.Errorf("a script from the conversation ran: window.pwned = %s", got)
	}
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll("main script, main img").length`); n != 0 {
		t.Errorf("the content made %d elements", n)
	}

	// The API key is in no page and no answer of the API.
	for _, path := range []string{"", "api/conversations", "api/receipts/" + strings.TrimPrefix(second, "/ui/receipts/")} {
		if body := get(t, ui+path); strings.Contains(body, clientKey) {
			t.Errorf("%s shows the client's key", ui+path)
		}
	}
	if html := browsertest.Eval[string](t, ctx, "document.documentElement.outerHTML"); strings.Contains(html, clientKey) {
		t.Errorf("the receipt's page shows the client's key")
	}
}

// checkScreenshot checks that shot is a PNG, and writes it to docs/ when
// ABRIDGE_UPDATE_SCREENSHOT=1.
func checkScreenshot(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 400 {
		t.Errorf("screenshot of %v, want a page", b)
	}
	if os.Getenv(envScreenshot) != "1" {
		return
	}
	path := filepath.Join("..", "..", "docs", "operator-page.png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// TestOperatorPageToken: with ABRIDGE_UI_TOKEN, the browser gets 401
// without it; ?token= once lets it in and sets a cookie scripts cannot
// read, which then opens the pages and the API.
func TestOperatorPageToken(t *testing.T) {
	const token = "ui-token-for-tests-7f3a"
	srv, _ := uiServe(t, map[string]string{"ABRIDGE_UI_TOKEN": token})
	root := strings.TrimSuffix(srv.base, "/v1")
	if strings.Contains(srv.stderr.String(), token) {
		t.Errorf("the log shows the token")
	}
	ctx := browsertest.New(t)
	status := func(url string) int64 {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		resp, err := chromedp.RunResponse(tctx, chromedp.Navigate(url))
		if err != nil {
			t.Fatalf("navigate to %s: %v", url, err)
		}
		return resp.Status
	}
	if got := status(root + "/ui/"); got != http.StatusUnauthorized {
		t.Errorf("/ui/ without the token: %d, want 401", got)
	}
	if body := browsertest.Eval[string](t, ctx, "document.body.textContent"); !strings.Contains(body, "401") {
		t.Errorf("the 401 page says %q", body)
	}
	if got := status(root + "/ui/?token=" + token); got != http.StatusOK {
		t.Errorf("/ui/?token=: %d, want 200", got)
	}
	if loc := browsertest.Eval[string](t, ctx, "location.href"); loc != root+"/ui/" {
		t.Errorf("after ?token= the address is %s, want the page's without the token", loc)
	}
	if c := browsertest.Eval[string](t, ctx, "document.cookie"); c != "" {
		t.Errorf("a script reads the cookie %q", c)
	}
	if got := status(root + "/ui/api/version"); got != http.StatusOK {
		t.Errorf("/ui/api/version with the cookie: %d, want 200", got)
	}
	resp, err := http.Get(root + "/ui/api/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the API without the token: %d, want 401", resp.StatusCode)
	}
}

// TestOperatorPageAccess: the page is off on a non-loopback address
// without a token (and the start-up line says so), and served on a
// loopback one, or anywhere with the token.
func TestOperatorPageAccess(t *testing.T) {
	tests := []struct {
		name   string
		addr   string
		token  string
		status int
		note   string
	}{
		{"loopback", "127.0.0.1:8787", "", 200, "operator's page at http://127.0.0.1:8787/ui/ (loopback only, no token)"},
		{"ipv6 loopback", "[::1]:8787", "", 200, "operator's page at http://[::1]:8787/ui/ (loopback only, no token)"},
		{"every interface", "0.0.0.0:8787", "", 404, "operator's page off: this proxy listens on 0.0.0.0:8787, not a loopback address, and ABRIDGE_UI_TOKEN is unset"},
		{"token", "10.1.2.3:8787", "t0k", 401, "operator's page at http://10.1.2.3:8787/ui/ (ABRIDGE_UI_TOKEN asked for)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr, err := net.ResolveTCPAddr("tcp", tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			h, note := operatorPage(&config.Config{UIToken: tc.token}, addr, emptySource{}, nil)
			if !strings.HasPrefix(note, tc.note) {
				t.Errorf("note %q, want it to start %q", note, tc.note)
			}
			req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
			req.Host = "127.0.0.1:8787"
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
		})
	}
}

// TestServeReceiptsReplicas runs two replicas of abridge serve on one
// PostgreSQL database: the receipt of a compaction made by one is served
// by the other's page and API, and so is its conversation.
func TestServeReceiptsReplicas(t *testing.T) {
	dsn := postgresDatabase(t)
	a, _ := uiServe(t, map[string]string{"ABRIDGE_SESSION_DB": dsn})
	b, _ := uiServe(t, map[string]string{"ABRIDGE_SESSION_DB": dsn})
	_, path := replayUntil(t, a.base, uiConversation(70), 0)
	id := strings.TrimPrefix(path, "/ui/receipts/")
	other := strings.TrimSuffix(b.base, "/v1")
	var r struct {
		receipt.Receipt
		Marker string
	}
	if err := json.Unmarshal([]byte(get(t, other+"/ui/api/receipts/"+id)), &r); err != nil {
		t.Fatal(err)
	}
	if r.ID != id || !strings.Contains(r.Marker, "fixing the parser") {
		t.Errorf("the other replica's receipt: %+v", r)
	}
	if page := get(t, other+path); !strings.Contains(page, "fixing the parser") {
		t.Errorf("the other replica's receipt page lacks the summary")
	}
	// The request records are written in the background: wait for them.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var convs struct{ Conversations []receipt.Conversation }
		if err := json.Unmarshal([]byte(get(t, other+"/ui/api/conversations")), &convs); err != nil {
			t.Fatal(err)
		}
		if len(convs.Conversations) == 1 && convs.Conversations[0].ID == r.Conversation && convs.Conversations[0].Compactions >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other replica lists %+v", convs.Conversations)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// emptySource is a ui.Source with nothing recorded.
type emptySource struct{}

func (emptySource) Conversations(context.Context) ([]receipt.Conversation, error) { return nil, nil }
func (emptySource) Conversation(context.Context, string) (receipt.Conversation, []receipt.Request, []receipt.Receipt, bool, error) {
	return receipt.Conversation{}, nil, nil, false, nil
}
func (emptySource) Receipt(context.Context, string) (receipt.Receipt, bool, error) {
	return receipt.Receipt{}, false, nil
}
func (emptySource) Version(context.Context) (string, error) { return "0", nil }

// TestReplayHTMLInBrowser opens the report of abridge replay --html in a
// real Chromium, from the file, with no server: the figures table, a chart
// with both lines for each transcript, and each compaction's marker.
func TestReplayHTMLInBrowser(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.html")
	res := runCLI(t, nil, "", "replay", "--html", path)
	if res.code != 0 || !strings.Contains(res.stderr, "wrote "+path) {
		t.Fatalf("abridge replay --html: %d\n%s", res.code, res.stderr)
	}
	ctx := browsertest.New(t)
	browsertest.Do(t, ctx, time.Minute, chromedp.Navigate("file://"+path), chromedp.WaitVisible(chromedp.CSS("#figures")))
	for expr, want := range map[string]int{
		`document.querySelectorAll("#figures tr").length`:                7, // the heading, 5 transcripts, the total
		`document.querySelectorAll("svg.chart").length`:                  5,
		`document.querySelectorAll("svg.chart polyline").length`:         10,
		`document.querySelectorAll("section.receipt pre.marker").length`: 6,
	} {
		if got := browsertest.Eval[int](t, ctx, expr); got != want {
			t.Errorf("%s = %d, want %d", expr, got, want)
		}
	}
	marker := browsertest.Eval[string](t, ctx, `document.querySelector("pre.marker").textContent`)
	if !strings.HasPrefix(marker, "[abridge: summary of the earlier conversation]") {
		t.Errorf("the first marker shown: %.200s", marker)
	}
	if w := browsertest.Eval[int](t, ctx, `document.querySelector("svg.chart").getBoundingClientRect().width`); w < 400 {
		t.Errorf("the chart is %d pixels wide", w)
	}
}

// TestHelpReceipts: abridge help serve documents the page, the headers
// and the token; abridge help replay explains every term the tables
// print, and --html.
func TestHelpReceipts(t *testing.T) {
	tests := []struct {
		command string
		want    []string
	}{
		{"serve", []string{"/ui/", "Abridge-Receipt", "Abridge-Compaction", "Abridge-Tokens", "Abridge-Messages", "ABRIDGE_UI_TOKEN",
			"Authorization:\nBearer TOKEN", "?token=TOKEN", "HttpOnly", "loopback", "401", "/ui/api/"}},
		{"replay", []string{"--html", "Terms:"}},
	}
	for _, term := range replay.Terms {
		tests[1].want = append(tests[1].want, "\n  "+term.Name+"\n")
	}
	for _, tc := range tests {
		t.Run(tc.command, func(t *testing.T) {
			res := runCLI(t, nil, "", "help", tc.command)
			if res.code != 0 {
				t.Fatalf("abridge help %s: %d %s", tc.command, res.code, res.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("abridge help %s does not say %q", tc.command, w)
				}
			}
		})
	}
}
