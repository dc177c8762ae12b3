package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoWatch runs the demo as a user watching it would: the first line
// it prints is the URL of the fleet page, which answers during the run with
// serve's /fleet page (and /fleet.json and /metrics beside it); at the end
// --replay-html has written the page carddrift replay --format html writes
// of the recorded store, byte for byte.
func TestDemoWatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	pagePath := filepath.Join(t.TempDir(), "replay.html")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--agents", "6", "--duration", "10s", "--seed", "5", "--data-dir", dir,
			"--replay-html", pagePath, "--log-level", "error"}, strings.NewReader(""), out, errOut)
	}()
	fleetURL := waitMatch(t, out, regexp.MustCompile(`watch the fleet at (http://\S+/fleet) `))[1]
	if first, _, _ := strings.Cut(out.String(), "\n"); !strings.Contains(first, fleetURL) {
		t.Errorf("the fleet URL is not the demo's first line: %q", first)
	}
	if !strings.HasPrefix(fleetURL, "http://127.0.0.1:") {
		t.Errorf("fleet URL %s is not on loopback", fleetURL)
	}

	// During the run (before the scorecard): the pages answer.
	get := func(url string) (int, string, string) {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	code, ctype, body := get(fleetURL)
	if code != http.StatusOK || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, "<h1>carddrift fleet</h1>") ||
		!strings.Contains(body, `http-equiv="refresh" content="2"`) {
		t.Errorf("GET %s = %d %s, want the fleet page refreshing every 2s:\n%.600s", fleetURL, code, ctype, body)
	}
	if strings.Contains(out.String(), "scorecard (seed") {
		t.Errorf("the demo had ended before its fleet page was read")
	}
	if code, _, body := get(fleetURL + ".json"); code != http.StatusOK || !strings.Contains(body, `"agents"`) {
		t.Errorf("GET /fleet.json = %d: %.300s", code, body)
	}
	if code, _, body := get(strings.TrimSuffix(fleetURL, "/fleet") + "/metrics"); code != http.StatusOK ||
		!strings.Contains(body, "carddrift_") || !strings.Contains(body, "process_cpu_seconds_total") {
		t.Errorf("GET /metrics = %d, want the workers' and the process's metrics: %.300s", code, body)
	}

	var exit int
	select {
	case exit = <-done:
	case <-ctx.Done():
		t.Fatal("the demo did not end")
	}
	if exit != exitOK && exit != exitFindings {
		t.Fatalf("demo = %d\n%s\n%s", exit, out.String(), errOut.String())
	}
	t.Logf("demo output:\n%s\n%s", out.String(), errOut.String())
	if !strings.Contains(errOut.String(), "wrote the replay page "+pagePath) {
		t.Errorf("stderr does not say the replay page was written:\n%s", errOut.String())
	}
	page, err := os.ReadFile(pagePath)
	if err != nil {
		t.Fatal(err)
	}
	if want := replayCLI(t, dir, "--format", "html"); !bytes.Equal(page, []byte(want)) {
		t.Errorf("--replay-html wrote %d bytes, carddrift replay --format html %d: not the same page", len(page), len(want))
	}
	if !bytes.Contains(page, []byte("card.drift")) {
		t.Errorf("the replay page shows no verdict")
	}
	// The pages stopped with the demo.
	if _, err := http.Get(fleetURL); err == nil {
		t.Errorf("GET %s answered after the demo ended", fleetURL)
	}
}

// TestDemoWatchFlags: the demo's pages are served on loopback only, and a
// --replay-html that cannot be written fails before the run.
func TestDemoWatchFlags(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.0.2.1:80", "example.com:80", "nonsense"} {
		if code, _, stderr := runCLI(t, "", "demo", "--http-addr", addr); code != exitUsage || !strings.Contains(stderr, "--http-addr") {
			t.Errorf("demo --http-addr %s = %d, want %d: %s", addr, code, exitUsage, stderr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		ln, err := listenLoopback(addr)
		if errors.Is(err, errNotLoopback) {
			t.Errorf("listenLoopback(%s): %v", addr, err)
		}
		if err == nil {
			ln.Close()
		}
	}
	missing := filepath.Join(t.TempDir(), "no-such-dir", "replay.html")
	if code, _, stderr := runCLI(t, "", "demo", "--replay-html", missing); code != exitUsage || !strings.Contains(stderr, "--replay-html") {
		t.Errorf("demo --replay-html %s = %d, want %d: %s", missing, code, exitUsage, stderr)
	}
}

// TestFleetHint: simulate names serve's /fleet beside its --metrics-url when
// serve answers there, and otherwise says how to open it.
func TestFleetHint(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/fleet", func(w http.ResponseWriter, r *http.Request) {})
	serve := httptest.NewServer(mux)
	defer serve.Close()
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	ctx := context.Background()
	cases := []struct{ metrics, want string }{
		{serve.URL + "/metrics", "the fleet as serve sees it: " + serve.URL + "/fleet"},
		{other.URL + "/metrics", "serve answers 404 at " + other.URL + "/fleet; open /fleet on serve's --http-addr"},
		{"", "open /fleet on serve's --http-addr"},
		{"not a url", "open /fleet on serve's --http-addr"},
	}
	for _, tc := range cases {
		if got := fleetHint(ctx, tc.metrics); !strings.HasPrefix(got, tc.want) {
			t.Errorf("fleetHint(%q) = %q, want it to start %q", tc.metrics, got, tc.want)
		}
	}
	serve.Close()
	if got := fleetHint(ctx, serve.URL+"/metrics"); !strings.Contains(got, "not reachable at "+serve.URL+"/fleet") {
		t.Errorf("fleetHint(closed server) = %q", got)
	}
}
