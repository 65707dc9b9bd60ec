package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"sync"

	"github.com/abridge-go/abridge/internal/redact"
	"github.com/abridge-go/abridge/processors/window"
)

// Policies of [Options.SummarizeFor]: for which requests the window may
// call its summarizer.
const (
	// SummarizeAll: every request (the default, for "").
	SummarizeAll = "all"
	// SummarizeCredential: requests that carry a credential.
	SummarizeCredential = "credential"
	// SummarizeAccepted: requests whose credential the upstream has
	// answered a POST with success before.
	SummarizeAccepted = "accepted"
)

// credentialHeaders are the headers a client may send its key in: the
// OpenAI and most APIs' Authorization, Azure's api-key, Anthropic's
// x-api-key.
var credentialHeaders = []string{"Authorization", "Api-Key", "X-Api-Key"}

// acceptedLimit bounds the credentials the proxy remembers as accepted;
// when full it forgets them all, and each is accepted again at its next
// success.
const acceptedLimit = 1 << 16

// tenants tells the proxy's clients apart by the credential each sends,
// so that none can make another pay, slow or lose its summaries: it names
// the payer of each request's summaries for the window, and lets the
// summarizer be called only for the requests the policy allows
// (Options.SummarizeFor, Options.ClientsPay). It learns which credentials
// the upstream accepts from the answers to the requests the proxy
// forwards, and keeps only hashes of them, in memory.
type tenants struct {
	summarizeFor string
	clientsPay   bool

	mu       sync.Mutex
	accepted map[string]struct{}
}

func newTenants(summarizeFor string, clientsPay bool) *tenants {
	switch summarizeFor {
	case "":
		summarizeFor = SummarizeAll
	case SummarizeAll, SummarizeCredential:
	default:
		summarizeFor = SummarizeAccepted
	}
	return &tenants{summarizeFor: summarizeFor, clientsPay: clientsPay, accepted: map[string]struct{}{}}
}

// request returns what the window needs to know of a request whose
// credential has the identity id (has: it has one): who pays for its
// summaries and, for a request the policy leaves out, that the window is
// not to call its summarizer.
func (t *tenants) request(id string, has bool) window.Request {
	var r window.Request
	if t.clientsPay {
		r.Payer = id
	}
	allowed := true
	switch t.summarizeFor {
	case SummarizeCredential:
		allowed = has || t.clientsPay
	case SummarizeAccepted:
		allowed = (has || t.clientsPay) && t.isAccepted(id)
	}
	r.Unpaid = !allowed
	return r
}

// transport returns next, recording, under SummarizeAccepted, the
// credential of each POST the upstream answers with a success (2xx) as
// accepted: a model call, not a listing some upstreams serve to anyone.
func (t *tenants) transport(next http.RoundTripper) http.RoundTripper {
	if t.summarizeFor != SummarizeAccepted {
		return next
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil && req.Method == http.MethodPost && resp.StatusCode >= 200 && resp.StatusCode < 300 {
			id, _ := credentialID(req.Header)
			t.accept(id)
		}
		return resp, err
	})
}

func (t *tenants) accept(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.accepted[id]; ok {
		return
	}
	if len(t.accepted) >= acceptedLimit {
		clear(t.accepted)
	}
	t.accepted[id] = struct{}{}
}

func (t *tenants) isAccepted(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.accepted[id]
	return ok
}

// credentialID returns a hash of the credential headers of h, and whether
// it has any: the identity of a client, which keeps no trace of its key.
func credentialID(h http.Header) (string, bool) {
	sum := sha256.New()
	has := false
	for _, name := range credentialHeaders {
		v := h.Get(name)
		has = has || v != ""
		sum.Write([]byte(name))
		sum.Write([]byte{0})
		sum.Write([]byte(v))
		sum.Write([]byte{0})
	}
	if !has {
		return "", false
	}
	return hex.EncodeToString(sum.Sum(nil)[:16]), true
}

// maxErrorBody bounds the error answer read to redact a credential from.
const maxErrorBody = 1 << 20

// redactBody replaces in resp's body, when resp is an error, the
// credentials auths (a credential header's value) and their tokens: an
// upstream that refuses a key often quotes it, and whatever reads the
// answer (an error, then a log line) must not repeat it.
func redactBody(resp *http.Response, auths ...string) error {
	if resp.StatusCode < 400 || resp.Body == nil {
		return nil
	}
	secrets := redact.Forms(auths...)
	if len(secrets) == 0 {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	body = []byte(redact.Replace(string(body), redact.Mark, secrets...))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return err
}
