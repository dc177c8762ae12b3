package test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// Issue 19, row 3: caches bounded by count, not bytes. A publisher allowed
// to publish lifecycle events submits tasks on distinct ids, each with a
// client card as large as a message may be (about 1 MiB), then tasks whose
// pins carry requirements of several hundred KiB, then tasks on agents
// whose card endpoint serves a new card of the maximum size at every fetch. carddrift serve keeps
// the parsed cards and the pins in its caches; counted in entries (1,024
// cards, 100,000 pins) that is gigabytes against the chart's 512 Mi limit.
// With --memory-budget (here CARDDRIFT_MEMORY_BUDGET, which the base commit
// ignores: it then runs its defaults) the live heap of the serve process,
// read after a forced GC, stays within the budget plus a fixed allowance
// for what is not cached (the program itself, the connection, in-flight
// work).
func TestAdversaryMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs carddrift serve; publishes ~200 MiB")
	}
	const (
		budget    = 64 << 20
		allowance = 48 << 20
		cards     = 110 // 1 MiB client cards, distinct tasks and digests
		bigPins   = 60  // pins of ~700 KiB requirements (OAuth scopes)
		liveCards = 40  // 1 MiB live cards, fetched for first-fetch pins
	)
	// An agent endpoint that serves a new maximum-size card at every fetch,
	// under as many agent URLs (paths) as there are tasks: one fetch each.
	var served atomic.Int64
	agentSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(maxSizeCard(int(1_000_000+n), "http://"+r.Host))
	}))
	t.Cleanup(agentSrv.Close)
	r := newRig(t, testConfig())
	bin := buildCarddrift(t)
	p := startBudgetServe(t, bin, r.wt.URL(), "membudget", "64MiB")
	before := liveHeap(t, p)
	t.Logf("serve live heap before: %.1f MiB", mib(before))

	// Each publish has its own deadline, generous for one message of up to
	// 1 MiB: the flood as a whole takes what the machine gives it (under
	// -race with the cores busy, more than the 3 minutes it once shared).
	publish := func(what string, s events.Submitted) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := r.emit.Submitted(ctx, s); err != nil {
			t.Fatalf("publish %s: %v", what, err)
		}
	}
	const agent = "http://127.0.0.1:9"
	var firstDigest string
	for i := range cards {
		card := maxSizeCard(i, agent)
		publish(fmt.Sprintf("card %d (%d bytes)", i, len(card)), events.Submitted{
			TaskID: fmt.Sprintf("big-card-%d", i), AgentURL: agent, SkillID: "s", Card: card,
		})
		if i == 0 {
			d, err := detector.Digest(card)
			if err != nil {
				t.Fatal(err)
			}
			firstDigest = d
		}
	}
	// Requirements the schema admits, near the 1 MiB payload: 7 schemes ×
	// 256 OAuth scopes × ~400 bytes.
	scopes := make(map[string][]string, 7)
	for s := range 7 {
		list := make([]string, 256)
		for j := range list {
			list[j] = fmt.Sprintf("scope-%d-%d-%s", s, j, strings.Repeat("s", 384))
		}
		scopes[fmt.Sprintf("scheme-%d", s)] = list
	}
	for i := range bigPins {
		scopes["scheme-0"][0] = fmt.Sprintf("scope-of-task-%d", i)
		publish(fmt.Sprintf("pin %d", i), events.Submitted{
			TaskID: fmt.Sprintf("big-pin-%d", i), AgentURL: agent, SkillID: "s", CardDigest: firstDigest,
			Requires: events.Requires{Scopes: scopes},
		})
	}
	for i := range liveCards {
		publish(fmt.Sprintf("live %d", i), events.Submitted{
			TaskID: fmt.Sprintf("live-card-%d", i), AgentURL: fmt.Sprintf("%s/agents/%d", agentSrv.URL, i), SkillID: "s",
		})
	}
	// carddrift has handled every event (drained: nothing pending or
	// unacknowledged); the bound only catches a worker that stopped.
	r.drained(t, 5*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"big-card-0", fmt.Sprintf("big-card-%d", cards-1), fmt.Sprintf("big-pin-%d", bigPins-1),
		fmt.Sprintf("live-card-%d", liveCards-1)} {
		if _, _, err := r.stores.Pins.Get(ctx, id); err != nil {
			t.Errorf("task %s not pinned: %v", id, err)
		}
	}
	if got := served.Load(); got < liveCards {
		t.Errorf("the agent served %d cards, want at least %d", got, liveCards)
	}
	// As deployed, Prometheus scrapes /metrics, which takes the fleet
	// census (every pinned card's version, the live cards' names and
	// skills): what it keeps counts too.
	scrape := http.Client{Timeout: 30 * time.Second}
	if resp, err := scrape.Get("http://" + p.httpAddr + "/metrics"); err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	} else {
		resp.Body.Close()
	}
	after := liveHeap(t, p)
	t.Logf("serve live heap after %d × ~1 MiB client cards, %d × ~700 KiB pins and %d × ~1 MiB live cards: %.1f MiB (budget %d MiB + allowance %d MiB)",
		cards, bigPins, liveCards, mib(after), budget>>20, allowance>>20)
	if after > budget+allowance {
		t.Errorf("serve live heap = %.1f MiB after the flood, want ≤ %d MiB (budget) + %d MiB (allowance)",
			mib(after), budget>>20, allowance>>20)
	}
}

// maxSizeCard is a valid card of about 1 MiB less the event envelope (so
// that the submission fits in a default 1 MiB NATS payload), distinct per i.
func maxSizeCard(i int, agent string) []byte {
	const size = 1<<20 - 16<<10
	head := fmt.Sprintf(`{"name":"big %d","version":"1","url":%q,"protocolVersion":"0.3.0",`+
		`"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
		`"skills":[{"id":"s","name":"s","description":"s","tags":["t"]}],"description":"`, i, agent)
	tail := `"}`
	return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
}

// startBudgetServe starts `carddrift serve` like startServe, with
// CARDDRIFT_MEMORY_BUDGET set to budget and the profiler on (liveHeap
// forces a GC through it). Its fetches may take 2 minutes: the live cards'
// agents share one host, whose fetches wait for a host slot within the
// fetch's total time, and 40 fetches of 1 MiB one after the other took
// more than the default 10 s under -race on a busy machine (card.unreachable
// instead of a live card in the caches the test measures).
func startBudgetServe(t *testing.T, bin, natsURL, name, budget string) *serveProc {
	t.Helper()
	return launchServe(t, bin, name, "", []string{"MEMORY_BUDGET=" + budget},
		"--nats-url", natsURL,
		"--pprof",
		"--fetch-allow", "127.0.0.0/8",
		"--fetch-timeout", "2m",
		"--fetch-connect-timeout", "30s",
		"--ack-wait", "30s",
		"--partitions", "4",
		"--drain-timeout", "3s",
		"--log-format", "json",
		"--log-level", "warn",
	)
}

// liveHeap forces a GC in the serve process and returns the bytes of live
// objects just after it: the profiler's heap endpoint with gc=1 collects
// first, and with debug=1 its text ends with runtime.MemStats (HeapAlloc).
// (Not /metrics: a scrape runs the fleet census, whose own allocations
// would be counted at the moment of reading: the test scrapes first.)
func liveHeap(t *testing.T, p *serveProc) float64 {
	t.Helper()
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + p.httpAddr + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("HeapAlloc %q: %v", v, err)
			}
			return f
		}
	}
	t.Fatalf("no HeapAlloc in the heap profile (%v)", sc.Err())
	return 0
}

func mib(b float64) float64 { return b / (1 << 20) }
