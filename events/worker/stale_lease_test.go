package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/worker"
)

// versionAgent serves a card with a long max-age and an ETag derived from the
// card's version only (as some servers do): after a rotation that keeps the
// version, a revalidation answers 304 although the content changed. It counts
// the requests it answers.
type versionAgent struct {
	srv      *httptest.Server
	mu       sync.Mutex
	card     string
	requests atomic.Int64
}

func newVersionAgent(t *testing.T, card string) *versionAgent {
	a := &versionAgent{card: card}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/agent-card.json" {
			http.NotFound(w, r)
			return
		}
		a.requests.Add(1)
		a.mu.Lock()
		card := strings.ReplaceAll(a.card, "AGENT", a.srv.URL)
		a.mu.Unlock()
		etag := `"v1.0.0"` // derived from "version", which the rotation keeps
		w.Header().Set("ETag", etag)
		w.Header().Set("Cache-Control", "max-age=60")
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(card))
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *versionAgent) rotate(card string) {
	a.mu.Lock()
	a.card = card
	a.mu.Unlock()
}

// TestStaleLeaseCannotContradictPin reproduces, deterministically, the race
// that made the 400-agent demo abort healthy tasks: a lease holds the
// agent's old card (fetched before the rotation, valid for a minute); the
// vendor rotates the card; a client discovers the new card and submits a
// task pinned on it; the task's capability-dependent transition comes inside
// the lease. The lease's observation was verified before the pin, so it
// cannot contradict it: the worker revalidates unconditionally (one fetch)
// and finds the pinned card live — no card.drift.
func TestStaleLeaseCannotContradictPin(t *testing.T) {
	r := newRig(t, func(o *worker.Options) {
		o.Fetch.MinLease = time.Minute // the lease holds for the whole test
	})
	ctx := context.Background()
	agent := newVersionAgent(t, writeupT0)
	url := agent.srv.URL

	// A first-fetch task makes carddrift take the lease on the old card.
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "early", AgentURL: url, SkillID: "summarize"}))
	waitFor(t, "the early task's pin", func() bool { return len(r.events(events.TypePinned, "early")) == 1 })
	oldDigest := r.events(events.TypePinned, "early")[0].Data.(events.Pinned).Digest

	// The vendor rotates (same version, so the same ETag); the client reads
	// the new card and plans a streaming-free task against it.
	agent.rotate(writeupT40)
	newCard := strings.ReplaceAll(writeupT40, "AGENT", url)
	newDigest, err := detector.Digest([]byte(newCard))
	if err != nil {
		t.Fatal(err)
	}
	if newDigest == oldDigest {
		t.Fatal("the rotation did not change the digest")
	}
	time.Sleep(20 * time.Millisecond) // the pin is made after the lease's full fetch
	before := agent.requests.Load()
	must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: "late", AgentURL: url, SkillID: "translate", Card: []byte(newCard)}))
	waitFor(t, "the late task's pin", func() bool { return len(r.events(events.TypePinned, "late")) == 1 })
	must(t, r.emit.Request(ctx, events.Request{TaskID: "late", AgentURL: url, Method: "tasks/resubscribe", Attempt: 1}))
	waitFor(t, "the transition handled", func() bool {
		return r.handled(events.TypeRequest, "unchanged")+r.handled(events.TypeRequest, "drift") == 1
	})

	if d := r.events(events.TypeDrift, "late"); len(d) != 0 {
		dr := d[0].Data.(events.Drift)
		t.Fatalf("card.drift for a task pinned on the live card: %s, live %s (pinned %s)", dr.Verdict.Reason, dr.Live.Digest, dr.Pinned.Digest)
	}
	if got := agent.requests.Load() - before; got != 1 {
		t.Fatalf("the agent answered %d requests for the transition, want exactly 1 (the unconditional revalidation)", got)
	}
	if n := r.handled(events.TypeRequest, "unchanged"); n != 1 {
		t.Fatalf("transition outcome unchanged = %d, want 1", n)
	}
}
