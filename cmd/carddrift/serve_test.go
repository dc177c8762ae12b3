package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/store/natstest"
	"github.com/carddrift/carddrift/store/topology"
)

// syncBuffer collects a command's output while the test reads it.
type syncBuffer = servicetest.Output

func waitMatch(t *testing.T, buf *syncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(buf.String()); m != nil {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %v in output:\n%s", re, buf.String())
	return nil
}

// serveInProcess runs `carddrift serve args...` in this process, its
// output in out and errOut. stop cancels it and waits up to 20s for it to
// return, failing the test unless it returns 0; it reports whether serve
// returned.
func serveInProcess(t *testing.T, args ...string) (out, errOut *syncBuffer, stop func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), strings.NewReader(""), out, errOut) }()
	return out, errOut, func() bool {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, errOut.String())
			}
			return true
		case <-time.After(20 * time.Second):
			t.Errorf("serve did not stop within 20s of cancel")
			return false
		}
	}
}

// TestServeWatch runs `carddrift serve` on its embedded server, feeds it with
// the Emitter as a client would, and tails the verdict with `carddrift watch`.
func TestServeWatch(t *testing.T) {
	card := strings.ReplaceAll(cardT0, "https://b.example.com/a2a", "http://placeholder")
	agent := servicetest.NewAgent(t, card)

	out, _, stop := serveInProcess(t, "--data-dir", t.TempDir(), "--nats-port", "0", "--http-addr", "127.0.0.1:0",
		"--fetch-allow", "127.0.0.0/8", "--min-lease", "0", "--partitions", "2", "--log-format", "json")
	defer stop()
	ctx := context.Background()
	natsURL := waitMatch(t, out, regexp.MustCompile(`listening on (nats://\S+)`))[1]
	httpAddr := waitMatch(t, out, regexp.MustCompile(`health on (http://[^/\s]+)/metrics`))[1]
	waitMatch(t, out, regexp.MustCompile(`consuming A2A_TASKS`))

	resp, err := http.Get(httpAddr + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/readyz = %v, %v", resp, err)
	}
	resp.Body.Close()

	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	emit, err := client.NewEmitter(js, "cli-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })
	// The pin lands before the rotation: wait for its card.pinned (a fixed
	// 300ms was not enough under -race on a busy machine, and the task was
	// pinned on the rotated card, with no drift to see).
	pinned, err := nc.SubscribeSync("card.pinned.>")
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Unsubscribe()
	if err := emit.Submitted(ctx, events.Submitted{TaskID: "task 1", AgentURL: agent.URL(), SkillID: "summarize",
		Requires: events.Requires{Streaming: true}, Posture: "fail-closed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pinned.NextMsg(2 * time.Minute); err != nil {
		t.Fatalf("no card.pinned for task 1: %v", err)
	}
	agent.Set(strings.Replace(card, `"streaming":true`, `"streaming":false`, 1))
	if err := emit.Request(ctx, events.Request{TaskID: "task 1", AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}); err != nil {
		t.Fatal(err)
	}

	// A bound for a watch that hangs; each returns at its --limit.
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	var wout, werr bytes.Buffer
	code := run(wctx, []string{"watch", "--nats-url", natsURL, "--from-start", "--json", "--task", "task 1",
		"--action", "abort", "--rule", "streaming-disabled", "--limit", "1"}, strings.NewReader(""), &wout, &werr)
	if code != 0 {
		t.Fatalf("watch exited %d: %s", code, werr.String())
	}
	var ce struct {
		Type string `json:"type"`
		Data struct {
			TaskID  string `json:"taskId"`
			Verdict struct {
				Action string `json:"action"`
			} `json:"verdict"`
		} `json:"data"`
	}
	if err := json.Unmarshal(wout.Bytes(), &ce); err != nil {
		t.Fatalf("watch --json line: %v\n%s", err, wout.String())
	}
	if ce.Type != "card.drift" || ce.Data.TaskID != "task 1" || ce.Data.Verdict.Action != "abort" {
		t.Fatalf("watch printed %s", wout.String())
	}

	var human bytes.Buffer
	code = run(wctx, []string{"watch", "--nats-url", natsURL, "--from-start", "--all", "--agent", agent.URL(), "--limit", "3"},
		strings.NewReader(""), &human, &werr)
	if code != 0 || !strings.Contains(human.String(), "PINNED") {
		t.Fatalf("watch --all = %d:\n%s", code, human.String())
	}

	resp, err = http.Get(httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	metrics.ReadFrom(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`carddrift_drift_total{action="abort",rule="streaming-disabled"} 1`, `carddrift_events_total{outcome="pinned",type="a2a.task.submitted"} 1`, "carddrift_fetches_total",
		"carddrift_pins 1\n", `carddrift_pins_per_agent_bucket{le="1"} 1`, "carddrift_agents_inconsistent 0", "carddrift_skills_inconsistent 0"} {
		if !strings.Contains(metrics.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	checkServeFleet(t, httpAddr, agent.URL())
}

// checkServeFleet reads serve's fleet page and JSON: the agent is there,
// the page reloads itself, and both refuse to be written to.
func checkServeFleet(t *testing.T, httpAddr, agentURL string) {
	t.Helper()
	get := func(path string) (int, string, string) {
		resp, err := http.Get(httpAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), b.String()
	}
	code, ctype, page := get("/fleet")
	if code != 200 || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(page, `<meta http-equiv="refresh" content="10"/>`) || !strings.Contains(page, agentURL) {
		t.Errorf("/fleet = %d %s:\n%s", code, ctype, page)
	}
	code, ctype, body := get("/fleet.json")
	var fl struct {
		Agents []struct {
			AgentURL string `json:"agentUrl"`
		} `json:"agents"`
	}
	if err := json.Unmarshal([]byte(body), &fl); code != 200 || ctype != "application/json" || err != nil || len(fl.Agents) != 1 || fl.Agents[0].AgentURL != agentURL {
		t.Errorf("/fleet.json = %d %s %v: %s", code, ctype, err, body)
	}
	resp, err := http.Post(httpAddr+"/fleet.json", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /fleet.json = %d, want 405", resp.StatusCode)
	}
}

func TestWatchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"watch", "--action", "explode"},
		{"watch", "--rule", "no-such-rule"},
		{"watch", "--agent", "ftp://x"},
	} {
		if code, _, _ := runCLI(t, "", args...); code != exitUsage {
			t.Errorf("carddrift %v = %d, want %d", args, code, exitUsage)
		}
	}
}

// Each --max-bytes-* flag sets the limit of its own stream or bucket, and
// only that one: the others keep their share of --storage-limit.
func TestServeMaxBytesFlags(t *testing.T) {
	for _, tc := range []struct{ flag, stream string }{
		{"tasks", "A2A_TASKS"},
		{"card-events", "CARD_EVENTS"},
		{"dlq", "CARDDRIFT_DLQ"},
		{"pins", "KV_carddrift-pins"},
		{"cards", "KV_carddrift-cards"},
		{"cards-large", "OBJ_carddrift-cards-large"},
		{"leases", "KV_carddrift-leases"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			var f serveFlags
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			f.register(fs)
			if err := fs.Parse([]string{"--storage-limit", "24GiB", "--max-bytes-" + tc.flag, "3MiB"}); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.storeConfig()
			if err != nil {
				t.Fatalf("storeConfig() error = %v", err)
			}
			limits := cfg.Limits()
			for stream, got := range limits {
				if stream == tc.stream {
					if got != 3<<20 {
						t.Errorf("--max-bytes-%s 3MiB: limit of %s = %d, want %d", tc.flag, stream, got, 3<<20)
					}
				} else if got < 1<<30 {
					t.Errorf("--max-bytes-%s 3MiB: limit of %s = %d, want its share of 24GiB", tc.flag, stream, got)
				}
			}
			if _, ok := limits[tc.stream]; !ok {
				t.Errorf("Limits() has no %s: %v", tc.stream, limits)
			}
		})
	}
}

// TestServeAgentCredentialsRefused: serve refuses a credentials file that
// does not parse, with a usage error that names what is wrong and never the
// value, whether given by flag or by CARDDRIFT_AGENT_CREDENTIALS.
func TestServeAgentCredentialsRefused(t *testing.T) {
	const secret = "Bearer serve-flag-secret-41c9"
	dir := t.TempDir()
	bad := filepath.Join(dir, "creds.json")
	if err := os.WriteFile(bad, []byte(`{"https://agent.example": {"headers": {"Authorization": "`+secret+`\u0007"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{"flag", []string{"serve", "--agent-credentials", bad}, ""},
		{"environment", []string{"serve"}, bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("CARDDRIFT_AGENT_CREDENTIALS", tc.env)
			}
			code, stdout, stderr := runCLI(t, "", tc.args...)
			if code != exitUsage || !strings.Contains(stderr, "--agent-credentials") || !strings.Contains(stderr, "bad header") {
				t.Errorf("serve = %d, stderr:\n%s\nwant a usage error naming the bad header", code, stderr)
			}
			if strings.Contains(stdout+stderr, "serve-flag-secret") {
				t.Errorf("the secret is in serve's output:\n%s%s", stdout, stderr)
			}
		})
	}
	if code, _, stderr := runCLI(t, "", "serve", "--agent-credentials", filepath.Join(dir, "none.json")); code != exitUsage {
		t.Errorf("a missing credentials file: %d\n%s", code, stderr)
	}
}

func TestServeMemoryBudgetUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"not a size", []string{"--memory-budget", "lots"}, "", "lots"},
		{"fraction", []string{"--memory-budget", "15.5MiB"}, "", "minimum"}, // read (store.ParseSize), then below 16MiB
		{"below the minimum", []string{"--memory-budget", "1MiB"}, "", "minimum"},
		{"environment", nil, "12XB", "12XB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("CARDDRIFT_MEMORY_BUDGET", tc.env)
			}
			args := append([]string{"serve", "--data-dir", t.TempDir(), "--nats-port", "0", "--http-addr", ""}, tc.args...)
			code, _, stderr := runCLI(t, "", args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("carddrift %s = %d:\n%s\nwant %d naming %q", strings.Join(args, " "), code, stderr, exitUsage, tc.want)
			}
		})
	}
}

// serve with a budget logs how it is split, sets Go's soft memory limit to
// 1.5× it and GOGC to serveGCPercent (unless GOGC is set) while it runs,
// and restores what it found when it returns.
// With an embedded server it leaves the limit alone (the server's memory is
// the process's too, outside the budget).
func TestServeMemoryBudgetApplied(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Setenv("GOGC", "") // as unset: serve sets its own
	gcPercent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	prevGC := gcPercent()
	t.Run("embedded server", func(t *testing.T) {
		out, errOut, stop := serveInProcess(t, "--data-dir", t.TempDir(), "--nats-port", "0", "--http-addr", "",
			"--partitions", "2", "--log-format", "json", "--memory-budget", "64MiB")
		waitMatch(t, errOut, regexp.MustCompile(`the NATS server is embedded, so Go's soft memory limit is not set`))
		waitMatch(t, out, regexp.MustCompile(`consuming`))
		if got := debug.SetMemoryLimit(-1); got != prev {
			t.Errorf("Go memory limit while serving with an embedded server = %d, want the previous %d", got, prev)
		}
		if got := gcPercent(); got != prevGC {
			t.Errorf("GOGC while serving with an embedded server = %d, want the previous %d", got, prevGC)
		}
		if !stop() {
			t.FailNow()
		}
	})
	srv, _, _ := natstest.StartJetStream(t)
	out, errOut, stop := serveInProcess(t, "--nats-url", srv.ClientURL(), "--http-addr", "",
		"--partitions", "2", "--log-format", "json", "--memory-budget", "64MiB")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stdout:\n%s", out.String())
		}
	})
	waitMatch(t, errOut, regexp.MustCompile(`"budget":"64MiB","pins":"16MiB","cards":"[0-9]+[KMi]*B","liveCards":"[0-9]+[KMi]*B","pull":"[0-9]+[KMi]*B","signatures":"[0-9]+[KMi]*B","signatureResults":"1118481[0-9]B","jkuKeySets":"559240[0-9]B".*"memory budget"`))
	waitMatch(t, out, regexp.MustCompile(`consuming`))
	if got := debug.SetMemoryLimit(-1); got != 96<<20 {
		t.Errorf("Go memory limit while serving = %d, want %d (1.5 × 64 MiB)", got, 96<<20)
	}
	if got := gcPercent(); got != serveGCPercent {
		t.Errorf("GOGC while serving = %d, want %d", got, serveGCPercent)
	}
	if !stop() {
		t.FailNow()
	}
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Errorf("Go memory limit after serve = %d, want the previous %d", got, prev)
	}
	if got := gcPercent(); got != prevGC {
		t.Errorf("GOGC after serve = %d, want the previous %d", got, prevGC)
	}
}

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
