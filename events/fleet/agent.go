package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Caching is how an agent lets clients cache its card.
type Caching int

// Caching behaviours: CacheStrong sends max-age and a strong ETag;
// CacheVersion max-age and an ETag of the card's "version" only (A2A v1.0
// §8.6: a change without a version bump answers 304); CacheRevalidate
// "no-cache" and a strong ETag; CacheNone neither.
const (
	CacheStrong Caching = iota
	CacheVersion
	CacheRevalidate
	CacheNone
)

var cachingNames = [...]string{CacheStrong: "strong-etag", CacheVersion: "version-etag", CacheRevalidate: "no-cache", CacheNone: "none"}

func (c Caching) String() string { return enumName(cachingNames[:], int(c), "Caching") }

// enumName is names[i], or "typ(i)" for an i out of range.
func enumName(names []string, i int, typ string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return typ + "(" + strconv.Itoa(i) + ")"
}

// Outage is an agent's availability: Refused closes its listener until it
// is Up again (same port); Unavailable answers 503 and "Retry-After: 1".
type Outage int

// Outages.
const (
	Up Outage = iota
	Refused
	Unavailable
)

var outageNames = [...]string{Up: "up", Refused: "refused", Unavailable: "unavailable"}

func (o Outage) String() string { return enumName(outageNames[:], int(o), "Outage") }

// Stats counts the HTTP requests an agent received: at the card path Full
// (no If-None-Match) or Conditional, of which NotModified and Unavailable
// answered 304 and 503; NotFound at any other path.
type Stats struct {
	Full        int `json:"full"`
	Conditional int `json:"conditional"`
	NotModified int `json:"notModified"`
	Unavailable int `json:"unavailable"`
	NotFound    int `json:"notFound"`
}

type body struct {
	raw  []byte
	etag string
}

// Agent is one simulated A2A agent: an HTTP server of its own on loopback.
// Its methods are safe for concurrent use.
type Agent struct {
	index   int
	id      string
	tmpl    template
	caching Caching
	fleet   *Fleet

	host string // set once by Fleet.Start
	base []byte

	// ctl serialises outage changes and shutdown (which start and stop the
	// server); mu guards what the handler reads and counts.
	ctl       sync.Mutex
	srv       *http.Server
	serveDone chan struct{} // closed when srv's Serve goroutine has returned

	mu      sync.Mutex
	served  []body // one card, or the replicas of a rolling deploy
	gen     uint64 // counts the changes of served
	next    int    // next replica to answer
	variant body   // the answer to "A2A-Version: tmpl.VariantVersion"
	outage  Outage
	stats   Stats
	rotated int
}

// ID returns the agent's name, "agent-00", "agent-01", ….
func (a *Agent) ID() string { return a.id }

func (a *Agent) Caching() Caching { return a.caching }

// MaxAge returns the max-age the agent sends, 0 for none.
func (a *Agent) MaxAge() time.Duration {
	if a.caching == CacheStrong || a.caching == CacheVersion {
		return maxAge
	}
	return 0
}

// Varies reports whether the agent's card varies by A2A-Version.
func (a *Agent) Varies() bool { return a.tmpl.Variant != "" }

// URL returns the agent's base URL (its agentUrl), "" before Fleet.Start.
func (a *Agent) URL() string {
	if a.host == "" {
		return ""
	}
	return "http://" + a.host
}

// CardURL returns the URL of the agent's card, or "" before Fleet.Start.
func (a *Agent) CardURL() string {
	if a.host == "" {
		return ""
	}
	return a.URL() + a.tmpl.Gen.Path()
}

// Served returns the bodies the agent answers with in turn.
func (a *Agent) Served() [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([][]byte, len(a.served))
	for i, b := range a.served {
		out[i] = slices.Clone(b.raw)
	}
	return out
}

// SetCard makes the agent serve raw (as given) from now on.
func (a *Agent) SetCard(raw []byte) { a.SetReplicas(raw) }

// SetReplicas simulates a rolling deploy: successive card requests get each
// of cards in turn, until the next SetCard or SetReplicas.
func (a *Agent) SetReplicas(cards ...[]byte) {
	if len(cards) == 0 {
		return
	}
	bs := make([]body, len(cards))
	for i, c := range cards {
		bs[i] = a.bodyOf(slices.Clone(c))
	}
	a.mu.Lock()
	a.served, a.next = bs, 0
	a.gen++
	a.mu.Unlock()
}

// servedGen returns the generation of what the agent serves (SetCard and
// SetReplicas move it) and its availability, read together.
func (a *Agent) servedGen() (uint64, Outage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gen, a.outage
}

// SetOutage changes the agent's availability. It returns ErrNotStarted
// before Fleet.Start, ErrClosed after Fleet.Close, and an error when the
// address can no longer be bound.
func (a *Agent) SetOutage(o Outage) error {
	if o < Up || o > Unavailable {
		return fmt.Errorf("%w: outage %d", ErrInvalidOptions, o)
	}
	a.ctl.Lock()
	defer a.ctl.Unlock()
	if a.host == "" {
		return ErrNotStarted
	}
	select {
	case <-a.fleet.closed:
		return ErrClosed
	default:
	}
	switch {
	case o == Refused && a.srv != nil:
		srv, done := a.srv, a.serveDone
		a.srv = nil
		a.setOutage(o)
		_ = srv.Close() // handlers in flight finish on their own
		// The listening socket is closed for good only once Serve's Accept
		// has returned: until then a new connection could be accepted into
		// the backlog and then reset instead of refused.
		<-done
	case o != Refused && a.srv == nil:
		ln, err := net.Listen("tcp", a.host)
		if err != nil {
			return fmt.Errorf("fleet: %s back up: %w", a.id, err)
		}
		a.fleet.serveOn(a, ln)
		a.setOutage(o)
	default:
		a.setOutage(o)
	}
	return nil
}

func (a *Agent) setOutage(o Outage) {
	a.mu.Lock()
	a.outage = o
	a.mu.Unlock()
}

func (a *Agent) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// Rotated returns how many card requests a rotation of several replicas
// answered (200 or 304).
func (a *Agent) Rotated() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rotated
}

// bodyOf computes the ETag the agent sends with raw.
func (a *Agent) bodyOf(raw []byte) body {
	b := body{raw: raw}
	switch a.caching {
	case CacheStrong, CacheRevalidate:
		b.etag = strongETag(raw)
	case CacheVersion:
		b.etag = versionETag(raw)
	}
	return b
}

func strongETag(raw []byte) string {
	sum := sha256.Sum256(raw)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// versionETag is an entity tag of the card's "version" ("v1.2.0"), else a
// strong tag of the bytes.
func versionETag(raw []byte) string {
	var card struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(raw, &card) != nil || card.Version == "" {
		return strongETag(raw)
	}
	ver := card.Version
	if !strings.ContainsFunc(ver, func(r rune) bool { return r < 0x21 || r == '"' || r > 0x7e }) {
		// Every byte may appear inside a quoted entity tag (RFC 9110 §8.8.3).
		return `"v` + ver + `"`
	}
	sum := sha256.Sum256([]byte(ver))
	return `"v-` + hex.EncodeToString(sum[:8]) + `"`
}

// pick chooses the answer to one card request and counts it.
func (a *Agent) pick(a2aVersion, ifNoneMatch string) (body, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ifNoneMatch != "" {
		a.stats.Conditional++
	} else {
		a.stats.Full++
	}
	var b body
	switch {
	case a.outage == Unavailable || len(a.served) == 0:
		a.stats.Unavailable++
		return body{}, http.StatusServiceUnavailable
	case a.Varies() && a2aVersion != "" && strings.TrimSpace(a2aVersion) == a.tmpl.VariantVersion:
		b = a.variant
	default:
		b = a.served[a.next%len(a.served)]
		a.next = (a.next + 1) % len(a.served)
		if len(a.served) > 1 {
			a.rotated++
		}
	}
	if b.etag != "" && ifNoneMatch != "" && etagMatches(ifNoneMatch, b.etag) {
		a.stats.NotModified++
		return b, http.StatusNotModified
	}
	return b, http.StatusOK
}

// ServeHTTP serves the card at its well-known path (GET, HEAD), 404 elsewhere.
func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != a.tmpl.Gen.Path() {
		a.mu.Lock()
		a.stats.NotFound++
		a.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	if a.Varies() {
		h.Set("Vary", "A2A-Version")
	}
	b, status := a.pick(r.Header.Get("A2A-Version"), r.Header.Get("If-None-Match"))
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
		http.Error(w, "agent unavailable", status)
		return
	}
	switch a.caching {
	case CacheStrong, CacheVersion:
		h.Set("Cache-Control", "max-age="+strconv.Itoa(int(maxAge/time.Second)))
	case CacheRevalidate:
		h.Set("Cache-Control", "no-cache")
	}
	if b.etag != "" {
		h.Set("ETag", b.etag)
	}
	if status == http.StatusOK {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(b.raw)))
	}
	w.WriteHeader(status)
	if status == http.StatusOK && r.Method != http.MethodHead {
		_, _ = w.Write(b.raw)
	}
}

// etagMatches applies If-None-Match's weak comparison (RFC 9110 §13.1.2):
// "*" or any listed tag equal to etag, ignoring W/ prefixes.
func etagMatches(header, etag string) bool {
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}
