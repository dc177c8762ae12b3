package fetcher

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestFetchAgent checks the one-shot look at an agent: the well-known
// resolution and legacy fallback of ObserveAgent, the workers' fixed headers
// and guard, and no lease or memory (every call asks again).
func TestFetchAgent(t *testing.T) {
	var modern, legacy atomic.Int64
	var headers atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers.Store(r.Header.Clone())
		switch r.URL.Path {
		case "/agents/a" + WellKnownPath:
			modern.Add(1)
			http.Error(w, "gone", http.StatusGone)
		case "/agents/a" + LegacyWellKnownPath, "/card.json":
			legacy.Add(1)
			w.Header().Set("ETag", `"v2"`)
			w.Header().Add("Cache-Control", "max-age=60")
			w.Header().Add("Cache-Control", "must-revalidate")
			_, _ = w.Write(cardJSON("0.2", false))
		case "/down" + WellKnownPath:
			http.Error(w, "boom", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := newFetcher(t, testOptions(newClock()))
	ctx := context.Background()

	for i := range 2 {
		obs, err := f.FetchAgent(ctx, srv.URL+"/agents/a/", "")
		if err != nil {
			t.Fatalf("FetchAgent %d: %v", i, err)
		}
		if want := srv.URL + "/agents/a" + LegacyWellKnownPath; obs.CardURL != want || obs.Card == nil || obs.Digest == "" ||
			obs.ETag != `"v2"` || obs.CacheControl != "max-age=60, must-revalidate" || obs.Status != http.StatusOK {
			t.Fatalf("FetchAgent %d = %+v, want the legacy card with its ETag and Cache-Control", i, obs)
		}
	}
	if modern.Load() != 2 || legacy.Load() != 2 {
		t.Errorf("agent-card.json hits %d, agent.json hits %d; want 2 and 2 (nothing remembered)", modern.Load(), legacy.Load())
	}
	h := headers.Load().(http.Header)
	if h.Get("A2A-Version") != DefaultA2AVersion || h.Get("Accept") != DefaultAccept || h.Get("User-Agent") != DefaultUserAgent {
		t.Errorf("headers = %v, want the workers' fixed headers", h)
	}

	// An explicit card URL is fetched as it is.
	if obs, err := f.FetchAgent(ctx, srv.URL, srv.URL+"/card.json"); err != nil || obs.CardURL != srv.URL+"/card.json" {
		t.Errorf("FetchAgent(card URL) = %+v, %v", obs, err)
	}
	// A 500 is not a reason to fall back; nothing anywhere is the first 404.
	fe := fetchErr(t, func() error { _, err := f.FetchAgent(ctx, srv.URL+"/down", ""); return err }(), ReasonStatus)
	if fe.Status != http.StatusInternalServerError {
		t.Errorf("Status = %d, want 500", fe.Status)
	}
	fe = fetchErr(t, func() error { _, err := f.FetchAgent(ctx, srv.URL+"/nowhere", ""); return err }(), ReasonStatus)
	if fe.Status != http.StatusNotFound || fe.URL != srv.URL+"/nowhere"+WellKnownPath {
		t.Errorf("FetchError = %+v, want the 404 of agent-card.json", fe)
	}

	// The guard applies: without Allow, loopback is refused.
	strict := newFetcher(t, Options{})
	_, err := strict.FetchAgent(ctx, srv.URL, "")
	fetchErr(t, err, ReasonRefusedAddress)
}
