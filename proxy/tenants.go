package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/abridge-go/abridge/processors/window"
)

// Policies of [TenantOptions.SummarizeFor]: for which requests the
// summarizer may call its model.
const (
	// SummarizeAccepted: requests whose credential the upstream has
	// answered with success before (the default).
	SummarizeAccepted = "accepted"
	// SummarizeCredential: requests that carry a credential.
	SummarizeCredential = "credential"
	// SummarizeAll: every request.
	SummarizeAll = "all"
)

// credentialHeaders are the headers a client may send its key in: the
// OpenAI and most APIs' Authorization, Azure's api-key, Anthropic's
// x-api-key.
var credentialHeaders = []string{"Authorization", "Api-Key", "X-Api-Key"}

// acceptedLimit bounds the credentials a Tenants remembers as accepted; when
// full it forgets them all, and each is accepted again at its next success.
const acceptedLimit = 1 << 16

// TenantOptions configures [Tenants]. The zero value summarizes for
// requests whose credential the upstream has accepted, a request without
// one counting as a credential, and makes each client pay for its own
// summaries.
type TenantOptions struct {
	// SummarizeFor is SummarizeAccepted (the default, for ""),
	// SummarizeCredential or SummarizeAll. Requests it leaves out are
	// compacted with the window's offline digest, and nothing is stored
	// for them (see window.WithoutSummarizer).
	SummarizeFor string
	// ProxyPays is true when the summarizer has an API key of its own:
	// every summary is paid by the proxy, whose breaker all requests then
	// share, and a request without a credential is summarized only under
	// SummarizeAll. When false, each client's credential pays for its
	// conversation's summaries, and the window keeps a circuit breaker per
	// credential (see window.WithPayer): a client whose key the
	// summarizer's upstream refuses stops only its own summaries.
	ProxyPays bool
}

// Tenants tells the proxy's clients apart by the credential each sends,
// so that none can make another pay, slow or lose its summaries: it names
// the payer of each request's summaries for the window, and lets the
// summarizer be called only for the requests its policy allows. It learns
// which credentials the upstream accepts from the answers to the requests
// the proxy forwards. It keeps only hashes of credentials, in memory, and
// is safe for concurrent use.
type Tenants struct {
	opts TenantOptions

	mu       sync.Mutex
	accepted map[string]struct{}
}

// NewTenants returns a Tenants configured by opts.
func NewTenants(opts TenantOptions) *Tenants {
	if opts.SummarizeFor == "" {
		opts.SummarizeFor = SummarizeAccepted
	}
	return &Tenants{opts: opts, accepted: map[string]struct{}{}}
}

// Handler returns next with each request's context naming the payer of
// its summaries and, for a request the policy leaves out, telling the
// window not to call its summarizer. Wrap the [Proxy] with it.
func (t *Tenants) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(t.context(r.Context(), r.Header)))
	})
}

// context returns ctx with what the window needs to know of the request
// whose header is h.
func (t *Tenants) context(ctx context.Context, h http.Header) context.Context {
	id, has := credentialID(h)
	if !t.opts.ProxyPays {
		ctx = window.WithPayer(ctx, id)
	}
	allowed := true
	switch t.opts.SummarizeFor {
	case SummarizeCredential:
		allowed = has || !t.opts.ProxyPays
	case SummarizeAccepted:
		allowed = (has || !t.opts.ProxyPays) && t.isAccepted(id)
	}
	if !allowed {
		ctx = window.WithoutSummarizer(ctx)
	}
	return ctx
}

// Transport returns a RoundTripper that sends the proxy's requests with
// next (nil means http.DefaultTransport) and records the credential of
// each POST the upstream answers with a success (2xx) as accepted: a model
// call, not a listing some upstreams serve to anyone. Give it to the
// [Proxy] as its Options.Transport.
func (t *Tenants) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
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

func (t *Tenants) accept(id string) {
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

func (t *Tenants) isAccepted(id string) bool {
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

// redactedCredential replaces a forwarded credential in what an upstream
// answered.
const redactedCredential = "[redacted key]"

// minCredentialLen is the length below which a credential is not looked
// for in answers: a local server's placeholder ("EMPTY", "ollama") is no
// secret, and replacing a short word everywhere would garble the text.
const minCredentialLen = 8

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
	var secrets []string
	for _, a := range auths {
		secrets = append(secrets, credentialForms(a)...)
	}
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	if len(secrets) == 0 {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	for _, s := range secrets {
		body = bytes.ReplaceAll(body, []byte(s), []byte(redactedCredential))
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return err
}

// credentialForms returns the strings an answer may quote auth as: the
// header's value, its token (after a scheme such as "Bearer"), and both as
// a JSON string escapes them; the longest first, none shorter than
// minCredentialLen.
func credentialForms(auth string) []string {
	auth = strings.TrimSpace(auth)
	forms := []string{auth}
	if _, token, ok := strings.Cut(auth, " "); ok {
		forms = append(forms, strings.TrimSpace(token))
	}
	var out []string
	for _, f := range forms {
		if len(f) < minCredentialLen {
			continue
		}
		out = append(out, f)
		if b, err := json.Marshal(f); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != f {
				out = append(out, esc)
			}
		}
	}
	return out
}
