package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store/natstest"
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

// lifecycleJetStream is an embedded JetStream with a stream for the
// lifecycle subjects.
func lifecycleJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "A2A", Subjects: []string{events.InboundSubjects}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	return js
}

// TestTrafficHold: while Hold says so, no task starts (nothing is
// published: the publisher here has no methods) and Held counts the
// agents' tries.
func TestTrafficHold(t *testing.T) {
	f := startFleet(t, Options{Agents: 2, Seed: 1})
	sched, err := Schedule(1, f.Agents(), ScenarioNames()[:1], 10*time.Second, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTraffic(TrafficOptions{
		JetStream: noPublisher{}, Schedule: sched, Start: time.Now(), Duration: 10 * time.Second,
		TaskEvery: 50 * time.Millisecond, StepEvery: 10 * time.Millisecond, Steps: 1,
		Hold: func() bool { return true }, HoldPoll: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	tr.Run(ctx)
	if n := len(tr.Tasks()); n != 0 || tr.Sent() != 0 || tr.Errors() != 0 {
		t.Errorf("held traffic started %d tasks and published %d events (%d errors), want none", n, tr.Sent(), tr.Errors())
	}
	if tr.Held() == 0 {
		t.Error("Held() = 0 after holding every task")
	}
}

// noPublisher is a jetstream.Publisher without methods: a publish panics.
type noPublisher struct{ jetstream.Publisher }

// Every agent runs one spanning task from the start of the run until
// shortly before its end, whatever Hold says: a task planned on the card
// served before a scenario's change that still runs when the change has
// settled, so that no scenario depends on a short task meeting its change
// by chance (TestDemoScorecard's rolling deploy once went unexercised
// while carddrift kept up).
func TestTrafficSpanningTasks(t *testing.T) {
	f := startFleet(t, Options{Agents: 3, Seed: 1})
	const d = 3 * time.Second
	sched, err := Schedule(1, f.Agents(), ScenarioNames()[:1], d, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Play(t.Context(), sched)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	start := p.Start()
	tr, err := NewTraffic(TrafficOptions{
		JetStream: lifecycleJetStream(t), Schedule: sched, Start: start, Duration: d,
		TaskEvery: 100 * time.Millisecond, StepEvery: 10 * time.Millisecond, SpanStepEvery: 40 * time.Millisecond,
		Hold: func() bool { return true }, Spanning: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	tr.Run(t.Context())
	tasks := tr.Tasks()
	if len(tasks) != len(sched) {
		t.Fatalf("%d tasks with every short task held, want one spanning task per agent (%d)", len(tasks), len(sched))
	}
	for _, as := range sched {
		var span *Task
		for _, tk := range tasks {
			if tk.AgentURL == as.AgentURL {
				span = tk
			}
		}
		if span == nil || !strings.HasSuffix(span.ID, "-span") {
			t.Fatalf("agent %s: spanning task %+v, want one whose id ends in -span", as.AgentID, span)
		}
		first, last := span.Events[0], span.Events[len(span.Events)-1]
		// Submitted in the first TaskEvery (bounds generous for a loaded
		// machine), it steps until 3 × SpanStepEvery before the end, then
		// completes after one more pause.
		if first.Type != events.TypeSubmitted || first.At.Sub(start) > d/2 {
			t.Errorf("%s: first event %s at %s, want the submission at the start", span.ID, first.Type, first.At.Sub(start))
		}
		if last.Type != events.TypeStatus || last.At.Sub(start) < d-120*time.Millisecond {
			t.Errorf("%s: last event %s at %s, want its completion no earlier than 120ms before the end (%s)", span.ID, last.Type, last.At.Sub(start), d)
		}
		if len(span.Events) < 10 {
			t.Errorf("%s: %d events over %s, want it to step throughout", span.ID, len(span.Events), d)
		}
	}
}

// TestPlanIsTheTraffic holds the traffic's cached answers to what a fresh
// plan computes from scratch: for every assignment of a 60-agent schedule
// (every scenario), every card label, every profile's skill and every media
// type the cards produce, artifactType, declares and the live
// labels of a plan kept across the agent's changes (SetCard, SetReplicas,
// outages) equal those of a plan made after the change.
func TestPlanIsTheTraffic(t *testing.T) {
	f := startFleet(t, Options{Agents: 60, Seed: 4})
	schedule, err := Schedule(4, f.Agents(), nil, time.Minute, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	check := func(as *Assignment, pl *plan, when string) {
		t.Helper()
		fresh := newPlan(as)
		if live, want := pl.liveLabels(), fresh.liveLabels(); !slices.Equal(live, want) {
			t.Fatalf("%s %s: live labels %v, fresh plan %v", as.AgentID, when, live, want)
		}
		types := map[string]bool{"text/plain": true, "application/octet-stream": true}
		for _, c := range as.Cards {
			for _, p := range as.Profiles {
				skill := p.Task.SkillID
				got, want := pl.artifactType(c.Label, skill), fresh.artifactType(c.Label, skill)
				if got != want {
					t.Errorf("%s %s %s %s: artifactType = %q, want %q", as.AgentID, when, c.Label, skill, got, want)
				}
				types[want] = true
				compared++
			}
		}
		for _, c := range as.Cards {
			for _, p := range as.Profiles {
				for mt := range types {
					if got, want := pl.declares(c.Label, p.Task.SkillID, mt), fresh.declares(c.Label, p.Task.SkillID, mt); got != want {
						t.Errorf("%s %s %s %s: declares = %v, want %v", as.AgentID, c.Label, p.Task.SkillID, mt, got, want)
					}
					compared++
				}
			}
		}
	}
	for i := range schedule {
		as := &schedule[i]
		pl := newPlan(as)
		check(as, pl, "at start")
		for _, c := range as.Cards {
			as.Agent.SetCard(c.Raw)
			check(as, pl, "serving "+c.Label)
		}
		if len(as.Cards) > 1 {
			as.Agent.SetReplicas(as.Cards[0].Raw, as.Cards[len(as.Cards)-1].Raw)
			check(as, pl, "rolling deploy")
		}
		as.Agent.setOutage(Unavailable)
		check(as, pl, "unavailable")
		as.Agent.setOutage(Up)
		check(as, pl, "up again")
	}
	if compared < 1000 {
		t.Errorf("only %d answers compared", compared)
	}
	t.Logf("%d answers compared", compared)
}

// TestScoreNamesTheObservation: a false abort in the scorecard names the pin
// and the live observation the verdict used (digest, label, time), so that a
// stale observation (fetched before the pin) is visible from the scorecard
// alone — the shape of the 400-agent demo's false aborts.
func TestScoreNamesTheObservation(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	as := changeAndBack(PinningRotation, "rotated")
	pinAt, obsAt := start.Add(2*time.Second), start.Add(time.Second) // the observation predates the pin
	drift := events.Drift{
		TaskID: "t1", AgentURL: as.AgentURL,
		Pinned:  events.CardRef{Digest: "sha256:rotated", FetchedAt: pinAt},
		Live:    events.CardRef{Digest: "sha256:base", FetchedAt: obsAt},
		Verdict: detector.Verdict{Action: detector.Abort},
		Trigger: events.Trigger{EventID: "e1"},
	}
	sc := Score(ScoreInput{
		Schedule: []Assignment{as}, Start: start, Duration: time.Minute,
		Tasks: map[string]*Task{"t1": {ID: "t1", AgentURL: as.AgentURL, Profile: Profile{Name: "p"},
			PlannedLabel: "rotated", PinSource: events.PinClientCard}},
		Received: []Received{
			{Event: events.Event{Data: events.Pinned{TaskID: "t1", AgentURL: as.AgentURL, Digest: "sha256:rotated", Source: events.PinClientCard}}, At: pinAt},
			{Event: events.Event{Data: drift}, At: start.Add(3 * time.Second)},
		},
		Lease: func(*Agent) time.Duration { return time.Second },
	})
	if sc.FalseAborts != 1 || len(sc.Problems) != 1 {
		t.Fatalf("false aborts %d, problems %+v, want one false abort", sc.FalseAborts, sc.Problems)
	}
	p := sc.Problems[0]
	if p.PinnedCard == nil || p.PinnedCard.Label != "rotated" || !p.PinnedCard.At.Equal(pinAt) {
		t.Errorf("PinnedCard = %+v, want rotated at %s", p.PinnedCard, pinAt)
	}
	if p.Observation == nil || p.Observation.Label != LabelBase || p.Observation.Digest != "sha256:base" || !p.Observation.At.Equal(obsAt) {
		t.Errorf("Observation = %+v, want base at %s", p.Observation, obsAt)
	}
}

// TestScoreUnknownPinAbort: a task pinned by a client digest of a card
// carddrift never saw gets pinned-card-unknown against any other live card,
// and fail-closed aborts it (the contract), although the scenario's table —
// which knows both bodies — would continue: not a false abort.
func TestScoreUnknownPinAbort(t *testing.T) {
	sc := scoreUnknownPin(t, detector.Requirements{SkillID: "s", Posture: detector.FailClosed})
	if sc.FalseAborts != 0 {
		t.Fatalf("false aborts = %d (%+v), want 0: the abort is the contract's for an unknown pinned body", sc.FalseAborts, sc.Problems)
	}
}

// TestScoreUnknownPinNotTheCoresVerdict: the unknown pin excuses only the
// verdict the core gives (task.Decide): an idempotent degrade task whose
// skill the live card offers is re-planned, not aborted, so an abort of it
// is a false abort.
func TestScoreUnknownPinNotTheCoresVerdict(t *testing.T) {
	sc := scoreUnknownPin(t, detector.Requirements{SkillID: "s", Posture: detector.Degrade, Idempotent: true})
	if sc.FalseAborts != 1 {
		t.Fatalf("false aborts = %d (%+v), want 1: the core re-plans this task", sc.FalseAborts, sc.Problems)
	}
}

// scoreUnknownPin scores one abort of a task with requirements req, pinned
// by a client digest of a card carddrift never saw, while the agent serves
// its base card (which the scenario's table says continues the task).
func scoreUnknownPin(t *testing.T, req detector.Requirements) Scorecard {
	t.Helper()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	base := []byte(`{"name":"a","url":"http://127.0.0.1:1/a2a","capabilities":{"streaming":true},"skills":[{"id":"s","name":"S"}]}`)
	as := Assignment{
		AgentURL: "http://127.0.0.1:1", Scenario: "flapping",
		Cards:        []CardVersion{{Label: LabelBase, Digest: "sha256:base", Raw: base}, {Label: "flipped", Digest: "sha256:flipped"}},
		Profiles:     []Profile{{Name: "plain", Task: req}},
		Expectations: []Expectation{{Profile: "plain", From: "flipped", To: LabelBase, Outcome: OutcomeContinue}},
	}
	drift := events.Drift{
		TaskID: "t1", AgentURL: as.AgentURL,
		Pinned:   events.CardRef{Digest: "sha256:flipped"}, // no fingerprint: carddrift never saw it
		Live:     events.CardRef{Digest: "sha256:base", Fingerprint: "sha256:x"},
		Findings: []detector.Finding{{Rule: detector.RulePinnedCardUnknown, Severity: detector.Breaking, Touches: true}},
		Verdict:  detector.Verdict{Action: detector.Abort},
	}
	return Score(ScoreInput{
		Schedule: []Assignment{as}, Start: start, Duration: time.Minute,
		Tasks: map[string]*Task{"t1": {ID: "t1", AgentURL: as.AgentURL, Profile: as.Profiles[0],
			PlannedLabel: "flipped", PinSource: events.PinClientDigest}},
		Received: []Received{{Event: events.Event{Data: drift}, At: start.Add(time.Second)}},
		Lease:    func(*Agent) time.Duration { return time.Second },
	})
}

// TestScoreSplitBrainJudgedByFetches: a split brain is expected to be
// reported only when carddrift fetched the card from the rotation of
// replicas often enough to see them alternate (Agent.Rotated), not merely
// because the traffic sent transitions during the split: a worker that
// handles them after the split (a backlog on a loaded machine, the demo at
// load 25) fetches one card. Then it is missed without card.inconsistent.
func TestScoreSplitBrainJudgedByFetches(t *testing.T) {
	f := startFleet(t, Options{Agents: 4, Seed: 1})
	c := newClient(t)
	a := agentWhere(t, f, "without an ETag", func(a *Agent) bool { return a.Caching() == CacheNone && !a.Varies() })
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	as := Assignment{
		AgentURL: a.URL(), Scenario: SplitBrain, Agent: a,
		Cards: []CardVersion{{Label: LabelBase, Digest: "sha256:base"}, {Label: "stale", Digest: "sha256:stale"}},
		Steps: []Step{{At: 0, Card: LabelBase}, {At: 5 * time.Second, Replicas: []string{LabelBase, "stale"}},
			{At: 50 * time.Second, Card: LabelBase}},
	}
	task := &Task{ID: "t1", AgentURL: as.AgentURL, PlannedLabel: LabelBase, PinSource: events.PinClientCard}
	for i := range 10 {
		task.Events = append(task.Events, SentEvent{ID: fmt.Sprintf("e%d", i), At: start.Add(time.Duration(10+i) * time.Second), Capability: true})
	}
	score := func() SplitBrainScore {
		return Score(ScoreInput{
			Schedule: []Assignment{as}, Start: start, Duration: time.Minute,
			Tasks: map[string]*Task{"t1": task},
			Lease: func(*Agent) time.Duration { return time.Second },
		}).SplitBrain
	}
	if got := score(); got != (SplitBrainScore{}) {
		t.Errorf("no fetch from the rotation: split brain %+v, want nothing injected", got)
	}
	a.SetReplicas(a.Served()[0], append(a.Served()[0], ' '))
	for range SplitVisible {
		get(t, c, a.CardURL())
	}
	if got := score(); got != (SplitBrainScore{Injected: 1, Missed: 1}) {
		t.Errorf("%d fetches from the rotation, no card.inconsistent: split brain %+v, want injected and missed", SplitVisible, got)
	}
}

// TestScoreLagIsTheRunsLatency: a transition counts as an exposure only
// when the card it met stayed so for as long as carddrift took to handle
// transitions in the run (p99 verdict latency, at least 1s): a change
// undone 2s later, in a run whose verdicts came 5s after their events, is
// not one carddrift could have seen (the flapping miss of the demo under
// load). With a Lag of 1s it is an exposure, and missed.
func TestScoreLagIsTheRunsLatency(t *testing.T) {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	as := changeAndBack(Flapping, "flipped")
	as.Steps = []Step{{At: 0, Card: LabelBase}, {At: 10 * time.Second, Card: "flipped"}, {At: 12 * time.Second, Card: LabelBase}}
	tasks := map[string]*Task{
		"t1": {ID: "t1", AgentURL: as.AgentURL, Profile: Profile{Name: "p"}, PlannedLabel: LabelBase,
			PinSource: events.PinClientCard, Events: []SentEvent{{ID: "t1/2", At: start.Add(10500 * time.Millisecond), Capability: true}}},
		"t2": {ID: "t2", AgentURL: as.AgentURL, Profile: Profile{Name: "p"}, PlannedLabel: LabelBase,
			PinSource: events.PinClientCard, Events: []SentEvent{{ID: "t2/2", At: start.Add(time.Second), Capability: true}}},
	}
	received := []Received{
		{Event: events.Event{Data: events.Pinned{TaskID: "t1", AgentURL: as.AgentURL, Digest: "sha256:base"}}, At: start},
		// t2's verdict comes 5s after its event: the run's latency.
		{Event: events.Event{Data: events.Drift{TaskID: "t2", AgentURL: as.AgentURL, Verdict: detector.Verdict{Action: detector.Continue},
			Trigger: events.Trigger{EventID: "t2/2"}}}, At: start.Add(6 * time.Second)},
	}
	for _, tc := range []struct {
		lag    time.Duration
		missed int
	}{{0, 0}, {time.Second, 1}} {
		sc := Score(ScoreInput{Schedule: []Assignment{as}, Start: start, Duration: time.Minute, Tasks: tasks,
			Received: received, Lease: func(*Agent) time.Duration { return time.Second }, Lag: tc.lag})
		if sc.Missed != tc.missed {
			t.Errorf("Lag %v: missed %d, want %d (problems %+v)", tc.lag, sc.Missed, tc.missed, sc.Problems)
		}
	}
}

// changeAndBack is an assignment of scenario with the base card and a
// changed one: profile p aborts on the change and continues on the way back.
func changeAndBack(scenario, changed string) Assignment {
	return Assignment{
		AgentURL: "http://127.0.0.1:1", Scenario: scenario,
		Cards:    []CardVersion{{Label: LabelBase, Digest: "sha256:base"}, {Label: changed, Digest: "sha256:" + changed}},
		Profiles: []Profile{{Name: "p"}},
		Expectations: []Expectation{
			{Profile: "p", From: LabelBase, To: changed, Outcome: OutcomeAbort},
			{Profile: "p", From: changed, To: LabelBase, Outcome: OutcomeContinue},
		},
	}
}
