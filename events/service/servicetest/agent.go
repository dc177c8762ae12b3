package servicetest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carddrift/carddrift/store/fetcher"
)

// Agent is an A2A agent on loopback serving a card at the well-known path,
// which the test swaps, fails, slows down or serves with caching headers.
// "AGENT" in a card stands for the agent's URL. Closed when the test ends.
type Agent struct {
	srv *httptest.Server

	mu           sync.Mutex
	card         string
	status       int
	cacheControl string
	etag         string
	delay        time.Duration
	arrivals     []time.Time

	requests    atomic.Int64
	full        atomic.Int64
	notModified atomic.Int64
}

// NewAgent starts an agent serving card with Cache-Control: no-cache.
func NewAgent(t testing.TB, card string) *Agent {
	t.Helper()
	a := &Agent{card: card, status: http.StatusOK, cacheControl: "no-cache"}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *Agent) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != fetcher.WellKnownPath {
		http.NotFound(w, r)
		return
	}
	a.requests.Add(1)
	a.mu.Lock()
	a.arrivals = append(a.arrivals, time.Now())
	card, status, cc, etag, delay := a.card, a.status, a.cacheControl, a.etag, a.delay
	a.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if status != http.StatusOK {
		http.Error(w, http.StatusText(status), status)
		return
	}
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	if cc != "" {
		w.Header().Set("Cache-Control", cc)
	}
	switch inm := r.Header.Get("If-None-Match"); {
	case inm == "":
		a.full.Add(1)
	case etag != "" && inm == etag:
		a.notModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(a.Served(card))
}

// URL is the agent's base URL (its card is at URL + fetcher.WellKnownPath).
func (a *Agent) URL() string { return a.srv.URL }

// Served returns the bytes the agent serves for card.
func (a *Agent) Served(card string) []byte {
	return []byte(strings.ReplaceAll(card, "AGENT", a.srv.URL))
}

// Set swaps the card, from the next request on.
func (a *Agent) Set(card string) { a.locked(func() { a.card = card }) }

// SetStatus makes the agent answer with code (200: the card).
func (a *Agent) SetStatus(code int) { a.locked(func() { a.status = code }) }

// SetCacheControl sets the Cache-Control header of the card ("": none).
func (a *Agent) SetCacheControl(cc string) { a.locked(func() { a.cacheControl = cc }) }

// SetETag makes the agent send etag and answer 304 to it, whatever the card.
func (a *Agent) SetETag(etag string) { a.locked(func() { a.etag = etag }) }

// SetDelay makes every answer wait d (or until the client gives up).
func (a *Agent) SetDelay(d time.Duration) { a.locked(func() { a.delay = d }) }

func (a *Agent) locked(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f()
}

// Requests is how many card requests the agent received.
func (a *Agent) Requests() int64 { return a.requests.Load() }

// FullRequests is how many card requests came without If-None-Match.
func (a *Agent) FullRequests() int64 { return a.full.Load() }

// NotModified is how many requests the agent answered with 304.
func (a *Agent) NotModified() int64 { return a.notModified.Load() }

// TakeArrivals returns when each card request since the last call arrived.
func (a *Agent) TakeArrivals() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	at := a.arrivals
	a.arrivals = nil
	return at
}

// The pinning write-up's cards: WriteupT40 turns streaming off, adds skill
// translate and swaps bearer for OAuth2, the version unchanged.
const (
	WriteupT0 = `{"name":"Vendor B","version":"1.0.0","protocolVersion":"1.0.0","url":"AGENT",
"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"security":[{"bearer":[]}],
"skills":[{"id":"summarize","name":"Summarize","description":"Summarizes text","tags":["text"]}]}`
	WriteupT40 = `{"name":"Vendor B","version":"1.0.0","protocolVersion":"1.0.0","url":"AGENT",
"capabilities":{"streaming":false},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
"securitySchemes":{"oauth2":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://b.example/token","scopes":{"tasks":"run"}}}}},
"security":[{"oauth2":["tasks"]}],
"skills":[{"id":"summarize","name":"Summarize","description":"Summarizes text","tags":["text"]},
{"id":"translate","name":"Translate","description":"Translates text","tags":["text"]}]}`
)
