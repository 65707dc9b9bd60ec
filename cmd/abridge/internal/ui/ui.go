// Package ui is the operator's page of abridge serve, served under /ui/:
// the conversations the proxy saw (requests, compactions, tokens not sent,
// last activity), a chart of each conversation's prompt tokens per request
// with and without abridge, and a page for each compaction's receipt (the
// marker as the model received it, what it replaced, who wrote it and what
// it cost). The pages are rendered by html/template on the server, with
// inline SVG charts and one small inline script that polls /ui/api/version
// and, when something new was recorded, fetches the page again and puts
// its content in place: no build step, no file from elsewhere, and the
// page works offline. The JSON behind the pages is served under /ui/api/.
//
// The pages show conversation content, so they are the operator's alone:
// with a token, every request must bring it (Authorization: Bearer, or
// ?token= once, which sets an HttpOnly, SameSite=Strict cookie), else it
// is answered 401; without one, only requests naming a loopback host are
// answered (abridge serve serves the pages without a token only when it
// listens on a loopback address). Every answer carries a
// Content-Security-Policy that lets only the page's own script run, and
// content is always escaped: a message holding <script> is shown as text.
package ui

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/receipt"
)

// Source is what the pages show: the Receipts of a session store
// (session.Store) is one. It must be safe for concurrent use.
type Source interface {
	// Conversations returns the conversations, the most recently active
	// first.
	Conversations(ctx context.Context) ([]receipt.Conversation, error)
	// Conversation returns a conversation with its requests and receipts,
	// oldest first; found is false when it is unknown.
	Conversation(ctx context.Context, id string) (c receipt.Conversation, reqs []receipt.Request, rcpts []receipt.Receipt, found bool, err error)
	// Receipt returns the receipt with id; found is false when unknown.
	Receipt(ctx context.Context, id string) (r receipt.Receipt, found bool, err error)
	// Version returns a value that changes whenever something is
	// recorded.
	Version(ctx context.Context) (string, error)
}

// Options configures [Handler].
type Options struct {
	// Source is what the pages show.
	Source Source
	// Token, when set, is required of every request (see the package
	// documentation); "" means none, and only requests naming a loopback
	// host are answered.
	Token string
	// Logger receives a warning when the source fails. Nil means none.
	Logger *zap.Logger
}

// Prefix is the path the pages are served under.
const Prefix = "/ui/"

// CookieName is the cookie that carries the token's proof once the token
// was given as ?token=.
const CookieName = "abridge_ui"

// Handler returns the handler of the pages, to mount at [Prefix].
func Handler(opts Options) http.Handler {
	h := &handler{src: opts.Source, token: opts.Token, log: opts.Logger}
	if h.log == nil {
		h.log = zap.NewNop()
	}
	if h.token != "" {
		h.cookie = cookieValue(h.token)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/{$}", h.page(h.conversations))
	mux.HandleFunc("GET /ui/conversations/{id}", h.page(h.conversation))
	mux.HandleFunc("GET /ui/receipts/{id}", h.page(h.receipt))
	mux.HandleFunc("GET /ui/api/conversations", h.api(h.apiConversations))
	mux.HandleFunc("GET /ui/api/conversations/{id}", h.api(h.apiConversation))
	mux.HandleFunc("GET /ui/api/receipts/{id}", h.api(h.apiReceipt))
	mux.HandleFunc("GET /ui/api/version", h.api(h.apiVersion))
	h.mux = mux
	return h
}

// Off returns the handler of the pages when they are not served: every
// request is answered 404, saying why.
func Off(why string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w.Header(), "")
		http.Error(w, "abridge: the operator's page is off: "+why, http.StatusNotFound)
	})
}

type handler struct {
	src    Source
	token  string
	cookie string // the cookie's value, proof of the token
	log    *zap.Logger
	mux    *http.ServeMux
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header(), "")
	if !h.allowed(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

// allowed reports whether r may be answered; when not, it has answered.
func (h *handler) allowed(w http.ResponseWriter, r *http.Request) bool {
	if h.token == "" {
		if !loopbackHost(r.Host) {
			http.Error(w, "abridge: the operator's page answers only requests for a loopback host (127.0.0.1, [::1], localhost) when ABRIDGE_UI_TOKEN is unset",
				http.StatusForbidden)
			return false
		}
		return true
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && h.matches(bearer) {
		return true
	}
	if c, err := r.Cookie(CookieName); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(h.cookie)) == 1 {
		return true
	}
	q := r.URL.Query()
	if q.Has("token") && h.matches(q.Get("token")) {
		// Once: the cookie stands for the token from now on, and the
		// address loses it (no token left in the history or a Referer).
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: h.cookie, Path: Prefix, HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		q.Del("token")
		to := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		http.Redirect(w, r, to.String(), http.StatusSeeOther)
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="abridge"`)
	http.Error(w, "abridge: 401 Unauthorized: give the operator's token (ABRIDGE_UI_TOKEN) as Authorization: Bearer TOKEN, or open /ui/?token=TOKEN once",
		http.StatusUnauthorized)
	return false
}

// matches reports whether s is the token, in constant time.
func (h *handler) matches(s string) bool {
	return subtle.ConstantTimeCompare([]byte(cookieValue(s)), []byte(h.cookie)) == 1
}

// cookieValue is the proof of token the cookie carries: a digest, so that
// the cookie never holds the token itself.
func cookieValue(token string) string {
	sum := sha256.Sum256([]byte("abridge ui cookie\x00" + token))
	return hex.EncodeToString(sum[:])
}

// loopbackHost reports whether host (a Host header, with or without a
// port) names a loopback address or localhost: a page served without a
// token answers no other, so that a web page cannot reach it through a
// name of its own resolved to 127.0.0.1.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// secure sets the headers every answer carries: a Content-Security-Policy
// letting only the script with nonce run (none when nonce is ""), and no
// caching, framing, sniffing or referrer.
func secure(h http.Header, nonce string) {
	script, style := "'none'", "'none'"
	if nonce != "" {
		script, style = "'nonce-"+nonce+"'", "'nonce-"+nonce+"'"
	}
	h.Set("Content-Security-Policy", "default-src 'none'; script-src "+script+"; style-src "+style+
		"; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// newNonce returns a fresh nonce for a page's script and style.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// api wraps a JSON endpoint: it answers what fn returns as JSON, 404 when
// fn finds nothing, 500 when the source fails.
func (h *handler) api(fn func(r *http.Request) (any, bool, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, found, err := fn(r)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case err != nil:
			h.log.Warn("ui: source failed", zap.String("path", r.URL.Path), zap.Error(err))
			w.WriteHeader(http.StatusInternalServerError)
			v = map[string]string{"error": "the session store failed; see the proxy's log"}
		case !found:
			w.WriteHeader(http.StatusNotFound)
			v = map[string]string{"error": "not found"}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	}
}

func (h *handler) apiConversations(r *http.Request) (any, bool, error) {
	cs, err := h.src.Conversations(r.Context())
	if cs == nil {
		cs = []receipt.Conversation{}
	}
	return map[string]any{"conversations": cs}, true, err
}

func (h *handler) apiConversation(r *http.Request) (any, bool, error) {
	id := r.PathValue("id")
	if !receipt.ValidID(id) {
		return nil, false, nil
	}
	c, reqs, rcpts, found, err := h.src.Conversation(r.Context(), id)
	return map[string]any{"conversation": c, "requests": reqs, "receipts": withMarkers(rcpts)}, found, err
}

func (h *handler) apiReceipt(r *http.Request) (any, bool, error) {
	id := r.PathValue("id")
	if !receipt.ValidID(id) {
		return nil, false, nil
	}
	rc, found, err := h.src.Receipt(r.Context(), id)
	return withMarker(rc), found, err
}

func (h *handler) apiVersion(r *http.Request) (any, bool, error) {
	v, err := h.src.Version(r.Context())
	return map[string]string{"version": v}, true, err
}

// markedReceipt is a receipt with the text of its marker, as the API
// serves it.
type markedReceipt struct {
	receipt.Receipt
	// Marker is the marker's text, as the model received it.
	Marker string `json:"marker"`
}

func withMarker(r receipt.Receipt) markedReceipt { return markedReceipt{r, r.Marker()} }

func withMarkers(rs []receipt.Receipt) []markedReceipt {
	out := make([]markedReceipt, len(rs))
	for i, r := range rs {
		out[i] = withMarker(r)
	}
	return out
}
