package config

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
)

// TestNoSecretAnywhere sets the API keys (and a database password) to
// distinctive values, builds everything, logs the configuration at debug
// level in every way a host might, runs the chain, the model and an agent
// turn against a fake server that first answers and then refuses, triggers
// configuration errors whose values hold the secrets, and checks that no
// log line, printed form or error contains any of them.
func TestNoSecretAnywhere(t *testing.T) {
	const (
		primaryKey = "sk-proj-PRIMARYSECRET-4f1c2e9a7b"
		summaryKey = "sk-SUMMARYSECRET-9d8c7b6a5e"
		dbPassword = "DBPASSWORDSECRET"
		uiToken    = "UITOKENSECRET-77"
	)
	srv := newFakeOpenAI(t)
	environ := map[string]string{
		"OPENAI_API_KEY":          primaryKey,
		"OPENAI_BASE_URL":         srv.URL,
		"ABRIDGE_SUMMARY_API_KEY": summaryKey,
		"ABRIDGE_SESSION_DB":      "postgres://abridge:" + dbPassword + "@db/abridge?password=" + dbPassword,
		"ABRIDGE_LOG_LEVEL":       "debug",
		"ABRIDGE_MAX_MESSAGES":    "8",
		"ABRIDGE_UI_TOKEN":        uiToken,
	}
	c := mustLoad(t, environ)

	// Every log line goes to an observer and to the two loggers the
	// configuration can build (console and json), all at debug level.
	// The window writes summaries ahead from other goroutines: the two
	// loggers share one locked writer, and the windows are closed before
	// the text is read.
	var logText bytes.Buffer
	logSync := zapcore.Lock(zapcore.AddSync(&logText))
	obsCore, logs := observer.New(zapcore.DebugLevel)
	cores := []zapcore.Core{obsCore}
	for _, format := range []string{"console", "json"} {
		cc := *c
		cc.LogFormat = format
		l, err := cc.newLogger(logSync)
		if err != nil {
			t.Fatal(err)
		}
		cores = append(cores, l.Core())
	}
	logger := zap.New(zapcore.NewTee(cores...))

	var out strings.Builder // everything printed or returned
	logger.Debug("configuration", c.Field(), zap.Any("any", c), zap.Reflect("reflect", c),
		zap.Stringer("stringer", c), zap.Object("object", *c), zap.Any("value", *c))
	fmt.Fprintf(&out, "%v %+v %#v %s %v %+v %#v %s\n", c, c, c, c, *c, *c, *c, *c)
	for _, v := range []any{c, *c} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
	}
	for k, v := range c.Redacted() {
		fmt.Fprintln(&out, k, v)
	}

	// Build everything and use it while the server answers.
	ctx := context.Background()
	comp, err := c.Build(BuildOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	h := conversation(20)
	processed, err := comp.Chain.Process(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := comp.Model.Request(ctx, processed, model.Settings{}); err != nil {
		t.Fatal(err)
	}
	a := agent.New(comp.Model, comp.AgentOptions...)
	if _, err := a.Run(ctx, h[:len(h)-1], "Go on."); err != nil {
		t.Fatal(err)
	}

	// Now the server refuses every request.
	srv.fail(http.StatusUnauthorized)
	if _, err := comp.Model.Request(ctx, processed, model.Settings{}); err == nil {
		t.Error("the model request succeeded against a refusing server")
	} else {
		fmt.Fprintf(&out, "%v %+v\n", err, err)
	}
	if _, err := comp.WindowSummarizer.Summarize(ctx, h[:7], "", ""); err == nil {
		t.Error("the summary succeeded against a refusing server")
	} else {
		fmt.Fprintf(&out, "%v %+v\n", err, err)
	}
	if err := comp.Window.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// A new window: no cached summary.
	fresh, err := c.Build(BuildOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := fresh.Chain.Process(ctx, h); err != nil {
		fmt.Fprintf(&out, "%v %+v\n", err, err)
	} else {
		fmt.Fprintln(&out, historyText(p))
	}
	if _, err := agent.New(comp.Model, comp.AgentOptions...).Run(ctx, h[:len(h)-1], "Go on."); err == nil {
		t.Error("the agent turn succeeded against a refusing server")
	} else {
		fmt.Fprintf(&out, "%v %+v\n", err, err)
	}

	// Configuration errors whose values hold the secrets.
	bad := map[string]string{}
	for k, v := range environ {
		bad[k] = v
	}
	bad["ABRIDGE_MAX_STEPS"] = primaryKey
	bad["ABRIDGE_TRIM_MAX_CHARS"] = "x" + summaryKey
	bad["ABRIDGE_SUMMARY_BASE_URL"] = "gw:" + primaryKey
	bad["ABRIDGE_LOG_LEVEL"] = summaryKey
	bad["ABRIDGE_SUMMARY_TIMEOUT"] = primaryKey
	bad["ABRIDGE_MODEL"] = primaryKey // accepted, but shown redacted
	if _, err := LoadFrom(bad); err == nil {
		t.Error("LoadFrom accepted bad values")
	} else {
		if got := strings.Count(err.Error(), "\n") + 1; got != 5 {
			t.Errorf("LoadFrom reported %d errors, want 5:\n%v", got, err)
		}
		fmt.Fprintf(&out, "%v %+v\n", err, err)
	}
	cc := *c
	cc.LogLevel = primaryKey
	cc.MaxSteps = -1
	cc.Model = summaryKey
	if _, err := cc.LoggerTo(io.Discard); err == nil {
		t.Error("LoggerTo accepted a bad level")
	} else {
		fmt.Fprintf(&out, "%v\n", err)
	}
	if err := cc.Validate(); err == nil {
		t.Error("Validate accepted bad values")
	} else {
		fmt.Fprintf(&out, "%v\n", err)
	}
	fmt.Fprintf(&out, "%v\n", cc)

	// Gather the logs, once no summary is being written (the first
	// window, closed above, ran the second agent turn in the foreground).
	if err := fresh.Window.Close(ctx); err != nil {
		t.Fatal(err)
	}
	all := out.String() + logText.String()
	for _, e := range logs.All() {
		all += e.Message + " " + fmt.Sprint(e.ContextMap()) + "\n"
	}

	// The secrets were really in use, and the configuration was logged.
	var auth []string
	for _, r := range srv.seen() {
		auth = append(auth, r.Authorization)
	}
	for _, want := range []string{"Bearer " + primaryKey, "Bearer " + summaryKey} {
		if !strings.Contains(strings.Join(auth, "\n"), want) {
			t.Errorf("the server never received %q", want)
		}
	}
	if logs.FilterMessage("configuration").Len() < 2 || !strings.Contains(all, Redaction) {
		t.Errorf("the configuration was not logged with redactions")
	}
	for _, secret := range []string{primaryKey, summaryKey, dbPassword, uiToken} {
		if i := strings.Index(all, secret); i >= 0 {
			t.Errorf("secret %q found in the output:\n...%s...", secret, all[max(0, i-200):min(len(all), i+len(secret)+50)])
		}
	}
}
