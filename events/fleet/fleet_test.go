package fleet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// startFleet starts a fleet for the test and closes it when the test ends.
func startFleet(t *testing.T, opts Options) *Fleet {
	t.Helper()
	f, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

// agentWhere returns the first agent that satisfies pred.
func agentWhere(t *testing.T, f *Fleet, what string, pred func(*Agent) bool) *Agent {
	t.Helper()
	for _, a := range f.Agents() {
		if pred(a) {
			return a
		}
	}
	t.Fatalf("no agent %s", what)
	return nil
}

// newClient returns an HTTP client whose connections are closed when the
// test ends.
func newClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// get fetches url with the given header pairs and returns the response and
// its body.
func get(t *testing.T, c *http.Client, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", url, err)
	}
	return resp, b
}

func TestFleetServesCardsAtWellKnownPaths(t *testing.T) {
	f := startFleet(t, Options{Seed: 1})
	c := newClient(t)
	for _, a := range f.Agents() {
		t.Run(a.ID()+"/"+a.tmpl.Name, func(t *testing.T) {
			want := LegacyCardPath
			other := CardPath
			if a.tmpl.Gen != GenV02 {
				want, other = CardPath, LegacyCardPath
			}
			if a.tmpl.Gen.Path() != want || a.CardURL() != a.URL()+want {
				t.Errorf("CardURL() = %s, want %s%s", a.CardURL(), a.URL(), want)
			}
			resp, body := get(t, c, a.CardURL())
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s = %d, want 200", a.CardURL(), resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if !bytes.Equal(body, a.Served()[0]) || !bytes.Equal(body, a.base) {
				t.Errorf("body is not Card() and the base card")
			}
			card, err := detector.Parse(body)
			if err != nil {
				t.Fatalf("served card does not parse: %v", err)
			}
			if u := card.URL(); !strings.Contains(u, a.host) {
				t.Errorf("interface URL %q does not point at the agent (%s)", u, a.host)
			}
			if resp, _ := get(t, c, a.URL()+other); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s = %d, want 404", other, resp.StatusCode)
			}
		})
	}
}

func TestNewCoversTemplatesAndCaching(t *testing.T) {
	f, err := New(Options{Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	tmpls, cachings, vary := map[string]bool{}, map[Caching]int{}, 0
	for _, a := range f.Agents() {
		tmpls[a.tmpl.Name] = true
		cachings[a.Caching()]++
		if a.Varies() {
			vary++
		}
	}
	for _, name := range templates {
		if !tmpls[name.Name] {
			t.Errorf("template %s unused in a %d-agent fleet", name, len(f.Agents()))
		}
	}
	for c := CacheStrong; c <= CacheNone; c++ {
		if cachings[c] == 0 {
			t.Errorf("no agent with caching %s", c)
		}
	}
	if len(f.Agents()) != DefaultAgents || vary != 1 {
		t.Errorf("%d agents, %d varying, want %d and 1", len(f.Agents()), vary, DefaultAgents)
	}
}

func TestNewIsDeterministic(t *testing.T) {
	shape := func(seed int64) []string {
		f, err := New(Options{Agents: 16, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range f.Agents() {
			out = append(out, a.ID()+" "+a.tmpl.Name+" "+a.Caching().String())
		}
		return out
	}
	if a, b := shape(7), shape(7); !slices.Equal(a, b) {
		t.Errorf("same seed, different fleets:\n%v\n%v", a, b)
	}
	if a, b := shape(7), shape(8); slices.Equal(a, b) {
		t.Errorf("seeds 7 and 8 built the same fleet")
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"zero value", Options{}, true},
		{"one agent", Options{Agents: 1}, true},
		{"negative agents", Options{Agents: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidOptions)) {
				t.Errorf("New(%+v) error = %v, want ok=%v or ErrInvalidOptions", tt.opts, err, tt.ok)
			}
		})
	}
}

func TestAgentCaching(t *testing.T) {
	f := startFleet(t, Options{Seed: 3})
	c := newClient(t)
	tests := []struct {
		caching      Caching
		cacheControl string
		etag         bool
	}{
		{CacheStrong, "max-age=2", true},
		{CacheVersion, "max-age=2", true},
		{CacheRevalidate, "no-cache", true},
		{CacheNone, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.caching.String(), func(t *testing.T) {
			a := agentWhere(t, f, tt.caching.String(), func(a *Agent) bool { return a.Caching() == tt.caching && !a.Varies() })
			resp, _ := get(t, c, a.CardURL())
			if got := resp.Header.Get("Cache-Control"); got != tt.cacheControl {
				t.Errorf("Cache-Control = %q, want %q", got, tt.cacheControl)
			}
			etag := resp.Header.Get("ETag")
			if (etag != "") != tt.etag || etag != a.bodyOf(a.Served()[0]).etag {
				t.Fatalf("ETag = %q, want present=%v and = ETag(Card()) %q", etag, tt.etag, a.bodyOf(a.Served()[0]).etag)
			}
			wantMaxAge := time.Duration(0)
			if strings.HasPrefix(tt.cacheControl, "max-age") {
				wantMaxAge = 2 * time.Second
			}
			if a.MaxAge() != wantMaxAge {
				t.Errorf("MaxAge() = %v, want %v", a.MaxAge(), wantMaxAge)
			}
			if !tt.etag {
				if resp, _ := get(t, c, a.CardURL(), "If-None-Match", `"anything"`); resp.StatusCode != http.StatusOK {
					t.Errorf("conditional GET without ETags = %d, want 200", resp.StatusCode)
				}
				return
			}
			resp, body := get(t, c, a.CardURL(), "If-None-Match", etag)
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Errorf("If-None-Match current ETag = %d (%d bytes), want 304 empty", resp.StatusCode, len(body))
			}
			if resp.Header.Get("ETag") != etag || resp.Header.Get("Cache-Control") != tt.cacheControl {
				t.Errorf("304 headers = %v, want ETag and Cache-Control repeated", resp.Header)
			}
			if resp, _ := get(t, c, a.CardURL(), "If-None-Match", `"stale", W/`+etag); resp.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match list with weak match = %d, want 304", resp.StatusCode)
			}
			if resp, _ := get(t, c, a.CardURL(), "If-None-Match", `"stale"`); resp.StatusCode != http.StatusOK {
				t.Errorf("If-None-Match stale = %d, want 200", resp.StatusCode)
			}
		})
	}
}

// TestVersionETagHidesContentChange is the fingerprint write-up's trap: an
// agent that derives its ETag from version keeps answering 304 after a
// content change without a version bump; a strong-ETag agent does not.
func TestVersionETagHidesContentChange(t *testing.T) {
	f := startFleet(t, Options{Seed: 3})
	c := newClient(t)
	tests := []struct {
		caching  Caching
		sameVer  int // status after a content change, version unchanged
		bumpedTo int // status after a version bump
	}{
		{CacheVersion, http.StatusNotModified, http.StatusOK},
		{CacheStrong, http.StatusOK, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.caching.String(), func(t *testing.T) {
			a := agentWhere(t, f, tt.caching.String(), func(a *Agent) bool { return a.Caching() == tt.caching && !a.Varies() })
			resp, _ := get(t, c, a.CardURL())
			etag := resp.Header.Get("ETag")

			e, err := newEditor(a.Served()[0], a.tmpl.Gen)
			if err != nil {
				t.Fatal(err)
			}
			caps, _ := e.v["capabilities"].(object)
			on, _ := caps["streaming"].(bool)
			e.setCapability("streaming", !on)
			a.SetCard(e.bytes())
			resp, body := get(t, c, a.CardURL(), "If-None-Match", etag)
			if resp.StatusCode != tt.sameVer {
				t.Errorf("after a change without version bump: %d, want %d", resp.StatusCode, tt.sameVer)
			}
			if resp, full := get(t, c, a.CardURL()); !bytes.Equal(full, e.bytes()) || resp.StatusCode != http.StatusOK {
				t.Errorf("unconditional GET does not return the changed card")
			}
			_ = body

			e.bumpVersion()
			a.SetCard(e.bytes())
			resp, body = get(t, c, a.CardURL(), "If-None-Match", etag)
			if resp.StatusCode != tt.bumpedTo || !bytes.Equal(body, e.bytes()) {
				t.Errorf("after a version bump: %d, want %d with the new card", resp.StatusCode, tt.bumpedTo)
			}
			if resp.Header.Get("ETag") == etag {
				t.Errorf("ETag unchanged after a version bump: %s", etag)
			}
		})
	}
}

func TestAgentVariesByA2AVersion(t *testing.T) {
	f := startFleet(t, Options{Seed: 5})
	c := newClient(t)
	a := agentWhere(t, f, "that varies", (*Agent).Varies)
	tests := []struct {
		name    string
		header  []string
		shape   string
		version string
	}{
		{"no header means 0.3", nil, "v0.3", "0.3.0"},
		{"0.3", []string{"A2A-Version", "0.3"}, "v0.3", "0.3.0"},
		{"1.0", []string{"A2A-Version", "1.0"}, "v1.0", "1.0"},
	}
	etags := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, c, a.CardURL(), tt.header...)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Vary") != "A2A-Version" {
				t.Fatalf("GET = %d, Vary %q; want 200 with Vary: A2A-Version", resp.StatusCode, resp.Header.Get("Vary"))
			}
			card, err := detector.Parse(body)
			if err != nil {
				t.Fatal(err)
			}
			if card.Shape != tt.shape || card.ProtocolVersions()[0] != tt.version {
				t.Errorf("card shape %s versions %v, want %s %s", card.Shape, card.ProtocolVersions(), tt.shape, tt.version)
			}
			etags[tt.shape] = resp.Header.Get("ETag")
			// The variant's ETag revalidates the variant only.
			if resp, _ := get(t, c, a.CardURL(), append(slices.Clone(tt.header), "If-None-Match", etags[tt.shape])...); resp.StatusCode != http.StatusNotModified {
				t.Errorf("revalidating under the same header = %d, want 304", resp.StatusCode)
			}
		})
	}
	if etags["v0.3"] == etags["v1.0"] {
		t.Errorf("both variants have ETag %s", etags["v0.3"])
	}
}

func TestAgentOutage(t *testing.T) {
	f := startFleet(t, Options{Agents: 4, Seed: 1})
	c := newClient(t)
	a := f.Agents()[0]
	host := a.host

	if err := a.SetOutage(Refused); err != nil {
		t.Fatalf("SetOutage(Refused): %v", err)
	}
	if _, err := c.Get(a.CardURL()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("GET while refused: error = %v, want connection refused", err)
	}
	if err := a.SetOutage(Up); err != nil {
		t.Fatalf("SetOutage(Up): %v", err)
	}
	if a.host != host {
		t.Errorf("host %s → %s, want the same address back", host, a.host)
	}
	if resp, _ := get(t, c, a.CardURL()); resp.StatusCode != http.StatusOK {
		t.Errorf("GET after coming back = %d, want 200", resp.StatusCode)
	}

	if err := a.SetOutage(Unavailable); err != nil {
		t.Fatal(err)
	}
	resp, _ := get(t, c, a.CardURL())
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("GET while unavailable = %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// From unavailable to refused and back up.
	if err := a.SetOutage(Refused); err != nil {
		t.Fatal(err)
	}
	if err := a.SetOutage(Unavailable); err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, c, a.CardURL()); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("refused → unavailable: GET = %d, want 503", resp.StatusCode)
	}
	if err := a.SetOutage(Up); err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, c, a.CardURL()); resp.StatusCode != http.StatusOK || a.outage != Up {
		t.Errorf("GET after up = %d (outage %s), want 200", resp.StatusCode, a.outage)
	}
	if s := a.Stats(); s.Unavailable != 2 {
		t.Errorf("Stats().Unavailable = %d, want 2", s.Unavailable)
	}
}

func TestAgentRollingDeploy(t *testing.T) {
	f := startFleet(t, Options{Agents: 4, Seed: 1})
	c := newClient(t)
	a := agentWhere(t, f, "with an ETag", func(a *Agent) bool { return a.Caching() != CacheNone && !a.Varies() })
	old := a.Served()[0]
	e, err := newEditor(old, a.tmpl.Gen)
	if err != nil {
		t.Fatal(err)
	}
	e.bumpVersion()
	e.addSkill("extra", "Extra", "An extra skill.", "extra")
	next := e.bytes()

	a.SetReplicas(old, next)
	if got := a.Served(); len(got) != 2 {
		t.Fatalf("Served() has %d bodies, want 2", len(got))
	}
	var seq []string
	for range 6 {
		_, body := get(t, c, a.CardURL())
		switch {
		case bytes.Equal(body, old):
			seq = append(seq, "old")
		case bytes.Equal(body, next):
			seq = append(seq, "next")
		default:
			t.Fatalf("unexpected body")
		}
	}
	if want := []string{"old", "next", "old", "next", "old", "next"}; !slices.Equal(seq, want) {
		t.Errorf("replicas answered %v, want %v", seq, want)
	}
	// A client holding the old ETag gets a 304 from the old replica and the
	// new card from the other one.
	var statuses []int
	for range 2 {
		resp, _ := get(t, c, a.CardURL(), "If-None-Match", a.bodyOf(old).etag)
		statuses = append(statuses, resp.StatusCode)
	}
	if !slices.Equal(statuses, []int{http.StatusNotModified, http.StatusOK}) {
		t.Errorf("revalidation across replicas = %v, want [304 200]", statuses)
	}

	a.SetCard(next)
	for range 3 {
		if _, body := get(t, c, a.CardURL()); !bytes.Equal(body, next) {
			t.Fatalf("after the deploy the old card is still served")
		}
	}
}

func TestAgentRequestCounters(t *testing.T) {
	f := startFleet(t, Options{Agents: 8, Seed: 2})
	c := newClient(t)
	a := agentWhere(t, f, "with a strong ETag", func(a *Agent) bool { return a.Caching() == CacheStrong && !a.Varies() })
	wrong := LegacyCardPath
	if a.tmpl.Gen.Path() == LegacyCardPath {
		wrong = CardPath
	}
	resp, _ := get(t, c, a.CardURL())
	etag := resp.Header.Get("ETag")
	get(t, c, a.CardURL())
	get(t, c, a.CardURL(), "If-None-Match", etag)
	get(t, c, a.CardURL(), "If-None-Match", `"stale"`)
	get(t, c, a.URL()+wrong)
	get(t, c, a.URL()+"/")

	want := Stats{Full: 2, Conditional: 2, NotModified: 1, NotFound: 2}
	if got := a.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	for _, other := range f.Agents() {
		if other != a {
			if s := other.Stats(); s != (Stats{}) {
				t.Errorf("%s counted requests it never got: %+v", other.ID(), s)
			}
		}
	}
}

func TestFleetLifecycle(t *testing.T) {
	f, err := New(Options{Agents: 2})
	if err != nil {
		t.Fatal(err)
	}
	a := f.Agents()[0]
	if a.URL() != "" || len(a.Served()) != 0 {
		t.Errorf("before Start: URL %q, %d cards; want none", a.URL(), len(a.Served()))
	}
	if err := a.SetOutage(Refused); !errors.Is(err, ErrNotStarted) {
		t.Errorf("SetOutage before Start = %v, want ErrNotStarted", err)
	}
	if _, err := Schedule(1, f.Agents(), nil, time.Second, 0.75); !errors.Is(err, ErrNotStarted) {
		t.Errorf("Schedule before Start = %v, want ErrNotStarted", err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Errorf("second Start = %v, want ErrStarted", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := f.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
	if err := a.SetOutage(Up); !errors.Is(err, ErrClosed) {
		t.Errorf("SetOutage after Close = %v, want ErrClosed", err)
	}
	if _, err := http.Get(a.CardURL()); err == nil {
		t.Errorf("GET after Close succeeded")
	}
}

// TestCloseLeavesNoGoroutines runs a fleet through everything that starts
// goroutines (servers, keep-alive connections, outages, a Player) and
// checks that Close leaves none behind.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()

	f, err := New(Options{Agents: 12, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for _, a := range f.Agents() {
		get(t, c, a.CardURL())
	}
	if err := f.Agents()[0].SetOutage(Refused); err != nil {
		t.Fatal(err)
	}
	if err := f.Agents()[0].SetOutage(Up); err != nil {
		t.Fatal(err)
	}
	sched, err := Schedule(9, f.Agents(), nil, time.Hour, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Play(context.Background(), sched)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-p.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Player still running after Close")
	}
	if !errors.Is(p.Err(), ErrClosed) {
		t.Errorf("Player.Err() = %v, want ErrClosed", p.Err())
	}
	tr.CloseIdleConnections()

	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after Close:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}
