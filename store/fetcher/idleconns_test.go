package fetcher

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A fleet larger than the old idle pool (256 connections) revalidates on
// the connections its first fetches opened: one dial per agent, however
// often it is fetched.
func TestFleetReusesConnections(t *testing.T) {
	const agents, rounds = 300, 3
	var dials atomic.Int64
	body := cardJSON("1.0.0", true)
	urls := make([]string, agents)
	for i := range agents {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				dials.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		urls[i] = srv.URL + WellKnownPath
	}
	f := newFetcher(t, testOptions(nil))
	for r := range rounds {
		for _, u := range urls {
			if _, err := f.Fetch(context.Background(), Request{URL: u}); err != nil {
				t.Fatalf("round %d, %s: %v", r, u, err)
			}
		}
	}
	if n := dials.Load(); n != agents {
		t.Fatalf("%d agents fetched %d times each: %d connections accepted, want %d (one per agent)", agents, rounds, n, agents)
	}
}
