package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/store/natstest"
	"github.com/carddrift/carddrift/store/topology"
)

// The floor does each event's I/O against a real server and agent: one
// pin put and card.pinned for the submission, one fetch (the card, one
// lease write) for the agent within its lease and card.observed at its
// first, a card.drift for every second event, a pin written back for
// every third, every event acknowledged once its writes are stored; on
// cancellation it deletes its buckets, stream and durables.
func TestFloorDoesTheRoundTrips(t *testing.T) {
	srv, _, js := natstest.StartJetStream(t)
	var fetched atomic.Int64
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/agent-card.json" {
			fetched.Add(1)
		}
		w.Write([]byte(`{"name":"x"}`))
	}))
	defer agent.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, srv.ClientURL(), nil, "127.0.0.1:0", time.Hour, time.Hour, 2, 3, 2) }()
	waitFor(t, "the floor's durables", func() bool {
		_, err := js.Consumer(ctx, topology.DefaultLifecycleStream, durablePre+topology.DefaultConsumer+"-p1")
		return err == nil
	})

	emit, err := client.NewEmitter(js, "iofloor-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	must(t, emit.Submitted(ctx, events.Submitted{TaskID: "t1", AgentURL: agent.URL, SkillID: "summarize", Posture: detector.FailClosed}))
	must(t, emit.Status(ctx, events.Status{TaskID: "t1", AgentURL: agent.URL, State: "working"}))
	must(t, emit.Status(ctx, events.Status{TaskID: "t1", AgentURL: agent.URL, State: "completed"}))

	waitFor(t, "three events acknowledged", func() bool {
		var acked uint64
		for p := range 2 {
			c, err := js.Consumer(ctx, topology.DefaultLifecycleStream, durablePre+topology.DefaultConsumer+"-p"+strconv.Itoa(p))
			if err != nil {
				return false
			}
			info, err := c.Info(ctx)
			if err != nil {
				return false
			}
			acked += info.AckFloor.Consumer
		}
		return acked == 3
	})
	if n := fetched.Load(); n != 1 {
		t.Errorf("agent fetched %d times, want 1 (one lease)", n)
	}
	// card.pinned, card.observed, and card.drift for the second event; two
	// pin writes, one lease.
	for stream, want := range map[string]uint64{eventsStream: 3, "KV_" + pinsBucket: 2, "KV_" + leasesBucket: 1} {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.State.LastSeq; got != want {
			t.Errorf("%s took %d writes, want %d", stream, got, want)
		}
	}

	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("run = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after cancellation")
	}
	for _, name := range []string{"KV_" + pinsBucket, "KV_" + leasesBucket, eventsStream} {
		if _, err := js.Stream(context.Background(), name); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("%s after run: %v, want deleted", name, err)
		}
	}
	if _, err := js.Consumer(context.Background(), topology.DefaultLifecycleStream, durablePre+topology.DefaultConsumer+"-p0"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("durable after run: %v, want deleted", err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
