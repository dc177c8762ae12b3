package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store/natstest"
	"github.com/carddrift/carddrift/store/topology"
)

// TestWatchLimitStops runs `watch --limit` to its end while the command's
// context stays alive (as it does for a command that returns by itself) and
// `watch` until its context ends: each must print its events, return, and
// leave no goroutine behind.
func TestWatchLimitStops(t *testing.T) {
	srv, _, js := natstest.StartJetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: topology.DefaultEventsStream, Subjects: []string{"card.>"}}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		obs := events.Observed{AgentURL: "https://a.example", CardURL: "https://a.example/.well-known/agent-card.json",
			Digest: "sha256:" + strings.Repeat("ab", 32), Status: 200, FetchedAt: t0, LatencyMs: 3}
		if i == 2 { // contract v1.3: a heartbeat standing for 150 fetches
			obs.Fetches, obs.Since = 150, t0.Add(-5*time.Minute)
		}
		m, err := events.Encode(events.Event{ID: fmt.Sprintf("obs-%d", i), Source: "urn:test", Time: t0, Data: obs}, events.Binary)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}

	before := clientGoroutines()
	for range 3 { // a leak per run adds up
		code, stdout, stderr := runCLI(t, "", "watch", "--nats-url", srv.ClientURL(), "--from-start", "--all", "--limit", "2")
		if code != exitOK || strings.Count(stdout, "OBSERVED") != 2 {
			t.Fatalf("watch --limit 2 = %d\n%s\n%s", code, stdout, stderr)
		}
	}
	// Without --limit, watch runs until its context ends, then returns 0.
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var out, errOut strings.Builder
	if code := run(cctx, []string{"watch", "--nats-url", srv.ClientURL(), "--from-start", "--all"}, strings.NewReader(""), &out, &errOut); code != exitOK || strings.Count(out.String(), "OBSERVED") != 3 ||
		!strings.Contains(out.String(), "fetches=150 since=2026-03-01T11:55:00Z") {
		t.Fatalf("watch until canceled = %d\n%s\n%s", code, out.String(), errOut.String())
	}

	// The NATS client's own goroutines end shortly after its connection
	// closes; nothing of watch's may outlive it. (The embedded server keeps
	// the ordered consumers until their inactivity threshold: its
	// goroutines are not counted.)
	deadline := time.Now().Add(10 * time.Second)
	for len(clientGoroutines()) > len(before) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if after := clientGoroutines(); len(after) > len(before) {
		t.Errorf("%d goroutine(s) before three watch --limit runs, %d after:\n%s", len(before), len(after), strings.Join(after, "\n\n"))
	}
}

// clientGoroutines returns the stacks of the process's goroutines but
// those of the embedded nats-server.
func clientGoroutines() []string {
	buf := make([]byte, 4<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "nats-server/") {
			out = append(out, g)
		}
	}
	return out
}
