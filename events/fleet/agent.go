package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Caching is how an agent lets clients cache its card.
type Caching int

// Caching behaviours, as real servers do it.
const (
	// CacheStrong sends "Cache-Control: max-age=N" and a strong ETag of the
	// body: any change of the body changes the ETag.
	CacheStrong Caching = iota
	// CacheVersion sends "Cache-Control: max-age=N" and an ETag derived from
	// the card's "version" only, as A2A v1.0 §8.6 allows: a content change
	// without a version bump still answers 304 to If-None-Match.
	CacheVersion
	// CacheRevalidate sends "Cache-Control: no-cache" and a strong ETag:
	// every use must revalidate.
	CacheRevalidate
	// CacheNone sends no Cache-Control and no ETag, so never a 304.
	CacheNone
)

var cachingNames = [...]string{CacheStrong: "strong-etag", CacheVersion: "version-etag", CacheRevalidate: "no-cache", CacheNone: "none"}

// String returns "strong-etag", "version-etag", "no-cache" or "none".
func (c Caching) String() string {
	if c >= 0 && int(c) < len(cachingNames) {
		return cachingNames[c]
	}
	return "Caching(" + strconv.Itoa(int(c)) + ")"
}

// Outage is an agent's availability.
type Outage int

// Outages.
const (
	// Up serves the card.
	Up Outage = iota
	// Refused closes the agent's listener: connections are refused until the
	// agent is up again (on the same port).
	Refused
	// Unavailable keeps the listener and answers every card request with
	// 503 Service Unavailable and "Retry-After: 1".
	Unavailable
)

var outageNames = [...]string{Up: "up", Refused: "refused", Unavailable: "unavailable"}

// String returns "up", "refused" or "unavailable".
func (o Outage) String() string {
	if o >= 0 && int(o) < len(outageNames) {
		return outageNames[o]
	}
	return "Outage(" + strconv.Itoa(int(o)) + ")"
}

// Stats counts the HTTP requests an agent has received. Requests at the
// card path count as Full (no If-None-Match) or Conditional (with one),
// whatever the answer; NotModified and Unavailable count the 304 and 503
// answers among them; NotFound counts requests at any other path (for
// example a v0.3 client probing a v0.2 agent's agent-card.json). Refused
// connections reach no handler and are not counted.
type Stats struct {
	Full        int `json:"full"`
	Conditional int `json:"conditional"`
	NotModified int `json:"notModified"`
	Unavailable int `json:"unavailable"`
	NotFound    int `json:"notFound"`
}

// body is one card body an agent can answer with, and its ETag.
type body struct {
	raw  []byte
	etag string
}

// Agent is one simulated A2A agent: an HTTP server of its own on loopback
// that serves an agent card at its well-known path. Its methods are safe for
// concurrent use.
type Agent struct {
	index   int
	id      string
	tmpl    template
	caching Caching
	maxAge  time.Duration
	fleet   *Fleet

	// Set once by Fleet.Start.
	host string
	base []byte

	// ctl serialises outage changes and shutdown (which start and stop the
	// server); mu guards what the handler reads.
	ctl       sync.Mutex
	srv       *http.Server
	serveDone chan struct{} // closed when srv's Serve goroutine has returned

	mu       sync.Mutex
	served   []body // one card, or the replicas of a rolling deploy
	gen      uint64 // counts the changes of served
	next     int    // next replica to answer
	variants map[string]body
	outage   Outage

	full, conditional, notModified, unavailable, notFound atomic.Int64
	rotated                                               atomic.Int64
}

// ID returns the agent's name in the fleet, "agent-00", "agent-01", ….
func (a *Agent) ID() string { return a.id }

// Index returns the agent's position in Fleet.Agents.
func (a *Agent) Index() int { return a.index }

// Template returns the name of the fixture card the agent's card is built
// from (see Templates).
func (a *Agent) Template() string { return a.tmpl.Name }

// Generation returns the generation of the agent's card; it decides the
// discovery path.
func (a *Agent) Generation() Generation { return a.tmpl.Gen }

// Caching returns the agent's caching behaviour.
func (a *Agent) Caching() Caching { return a.caching }

// MaxAge returns the max-age the agent sends, or 0 when it sends none
// (CacheRevalidate, CacheNone): a client's lease is then its lower clamp.
func (a *Agent) MaxAge() time.Duration {
	if a.caching == CacheStrong || a.caching == CacheVersion {
		return a.maxAge
	}
	return 0
}

// Varies reports whether the agent answers with a different card depending
// on the A2A-Version request header (and sends "Vary: A2A-Version").
func (a *Agent) Varies() bool { return a.tmpl.Variant != "" }

// Host returns "127.0.0.1:port", or "" before Fleet.Start.
func (a *Agent) Host() string { return a.host }

// URL returns the agent's base URL, "http://127.0.0.1:port" (the agentUrl
// of lifecycle events), or "" before Fleet.Start.
func (a *Agent) URL() string {
	if a.host == "" {
		return ""
	}
	return "http://" + a.host
}

// CardPath returns the well-known path the agent serves its card at.
func (a *Agent) CardPath() string { return a.tmpl.Gen.Path() }

// CardURL returns the URL of the agent's card, or "" before Fleet.Start.
func (a *Agent) CardURL() string {
	if a.host == "" {
		return ""
	}
	return a.URL() + a.CardPath()
}

// BaseCard returns the card the agent served when the fleet started (its
// template with interface URLs pointing at the agent), or nil before
// Fleet.Start.
func (a *Agent) BaseCard() []byte { return slices.Clone(a.base) }

// Card returns the body the agent serves now to a request without an
// A2A-Version header (the first replica during a rolling deploy), or nil
// before Fleet.Start.
func (a *Agent) Card() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.served) == 0 {
		return nil
	}
	return slices.Clone(a.served[0].raw)
}

// Served returns every body the agent answers with in turn: one, or the
// replicas of a rolling deploy.
func (a *Agent) Served() [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([][]byte, len(a.served))
	for i, b := range a.served {
		out[i] = slices.Clone(b.raw)
	}
	return out
}

// ETag returns the entity tag the agent sends with raw ("" under
// CacheNone). It is what a client's If-None-Match must carry to get a 304.
func (a *Agent) ETag(raw []byte) string { return a.bodyOf(raw).etag }

// SetCard makes the agent serve raw from now on, ending a rolling deploy.
// raw is served as given (it need not be a valid card). A variant set with
// SetVariant is kept.
func (a *Agent) SetCard(raw []byte) { a.SetReplicas(raw) }

// SetReplicas simulates a rolling deploy: the agent answers successive card
// requests with each of cards in turn, as replicas behind one load balancer
// would, until the next SetCard or SetReplicas. With one card it is SetCard;
// with none it does nothing.
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

// SetVariant makes the agent answer requests carrying "A2A-Version:
// version" with raw; a nil raw removes the variant. An agent with a variant
// sends "Vary: A2A-Version" on every answer.
func (a *Agent) SetVariant(version string, raw []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if raw == nil {
		delete(a.variants, version)
		return
	}
	if a.variants == nil {
		a.variants = map[string]body{}
	}
	a.variants[version] = a.bodyOf(slices.Clone(raw))
}

// servedGen returns the generation of what the agent serves (it moves at
// every SetCard and SetReplicas) and its availability, read together.
func (a *Agent) servedGen() (uint64, Outage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gen, a.outage
}

// Outage returns the agent's availability.
func (a *Agent) Outage() Outage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.outage
}

// SetOutage changes the agent's availability. Refused closes its listener
// and open connections; leaving Refused listens again on the same address.
// It returns ErrNotStarted before Fleet.Start, ErrClosed after Fleet.Close,
// and an error when the address can no longer be bound.
func (a *Agent) SetOutage(o Outage) error {
	if o < Up || o > Unavailable {
		return fmt.Errorf("%w: outage %d", ErrInvalidOptions, o)
	}
	a.ctl.Lock()
	defer a.ctl.Unlock()
	if a.host == "" {
		return ErrNotStarted
	}
	if a.fleet.isClosed() {
		return ErrClosed
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
		if err := a.fleet.serve(a); err != nil {
			return fmt.Errorf("fleet: %s back up: %w", a.id, err)
		}
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

// Requests returns how many card requests the agent has received without
// (full) and with (conditional) If-None-Match. See Stats.
func (a *Agent) Requests() (full, conditional int) {
	return int(a.full.Load()), int(a.conditional.Load())
}

// Rotated returns how many card requests the agent answered (200 or 304)
// from a rotation of several replicas (SetReplicas with more than one
// card): what a fetcher could see of replicas that disagree.
func (a *Agent) Rotated() int { return int(a.rotated.Load()) }

// Stats returns the agent's request counters.
func (a *Agent) Stats() Stats {
	return Stats{
		Full:        int(a.full.Load()),
		Conditional: int(a.conditional.Load()),
		NotModified: int(a.notModified.Load()),
		Unavailable: int(a.unavailable.Load()),
		NotFound:    int(a.notFound.Load()),
	}
}

// bodyOf computes the ETag of raw under the agent's caching behaviour.
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

// strongETag is a strong entity tag of the bytes.
func strongETag(raw []byte) string {
	sum := sha256.Sum256(raw)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// versionETag is an entity tag derived from the card's "version" alone
// ("v1.2.0"); a body that is not a card, or has no usable version, gets a
// strong tag of its bytes instead.
func versionETag(raw []byte) string {
	var card struct{ Version string }
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

// pick chooses the body for one request and advances the replica rotation.
func (a *Agent) pick(a2aVersion string) (body, Outage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.outage == Unavailable {
		return body{}, Unavailable
	}
	if b, ok := a.variants[strings.TrimSpace(a2aVersion)]; ok && a2aVersion != "" {
		return b, Up
	}
	if len(a.served) == 0 {
		return body{}, Unavailable
	}
	b := a.served[a.next%len(a.served)]
	a.next = (a.next + 1) % len(a.served)
	if len(a.served) > 1 {
		a.rotated.Add(1)
	}
	return b, Up
}

// ServeHTTP serves the card at the agent's well-known path (GET and HEAD),
// honouring If-None-Match with 304, and 404 everywhere else.
func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != a.CardPath() {
		a.notFound.Add(1)
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	inm := r.Header.Get("If-None-Match")
	if inm != "" {
		a.conditional.Add(1)
	} else {
		a.full.Add(1)
	}
	h := w.Header()
	if a.Varies() {
		h.Set("Vary", "A2A-Version")
	}
	b, outage := a.pick(r.Header.Get("A2A-Version"))
	if outage == Unavailable {
		a.unavailable.Add(1)
		h.Set("Retry-After", "1")
		http.Error(w, "agent unavailable", http.StatusServiceUnavailable)
		return
	}
	switch a.caching {
	case CacheStrong, CacheVersion:
		h.Set("Cache-Control", "max-age="+strconv.Itoa(int(a.maxAge/time.Second)))
	case CacheRevalidate:
		h.Set("Cache-Control", "no-cache")
	}
	if b.etag != "" {
		h.Set("ETag", b.etag)
		if inm != "" && etagMatches(inm, b.etag) {
			a.notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b.raw)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
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
