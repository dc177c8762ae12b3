package census_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/inspect/impact"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

const extSecret = "tok-51e09f2c-fleet-extended-secret"

// ledger is a v1.0 JSON-RPC agent whose public card (1.0.0, summarize)
// offers an extended card (2.0.0, summarize and audit-ledger) to
// "Bearer extSecret" only, echoing a refused token in its 401.
type ledger struct {
	srv   *httptest.Server
	mu    sync.Mutex
	token string
}

func newLedger(t *testing.T) *ledger {
	l := &ledger{token: "Bearer " + extSecret}
	l.srv = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *ledger) card(version string, skills ...string) []byte {
	var s []string
	for _, id := range skills {
		s = append(s, fmt.Sprintf(`{"id":%q,"name":%q,"description":"d","tags":["t"]}`, id, id))
	}
	return fmt.Appendf(nil, `{"name":"Ledger","description":"ledger agent","version":%q,`+
		`"supportedInterfaces":[{"url":"%s/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
		`"capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[%s]}`,
		version, l.srv.URL, strings.Join(s, ","))
}

func (l *ledger) public() []byte   { return l.card("1.0.0", "summarize") }
func (l *ledger) extended() []byte { return l.card("2.0.0", "summarize", "audit-ledger") }

func (l *ledger) serve(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w.Header().Set("Cache-Control", "no-cache")
	switch r.URL.Path {
	case "/.well-known/agent-card.json":
		_, _ = w.Write(l.public())
	case "/a2a":
		_, _ = io.Copy(io.Discard, r.Body)
		if got := r.Header.Get("Authorization"); got != l.token {
			http.Error(w, "token "+got+" not accepted", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, l.extended())
	default:
		http.NotFound(w, r)
	}
}

// TestTakeExtended: the fleet view of agents with authenticated extended
// cards, taken from a worker's stores and card stream (with a Tally and
// without): the agent's live card is its public card, never the extended
// card its lease also holds; the extended card has its own digest, version
// and state (unreachable: unauthorized once the token is rotated); tasks
// per card version say which are pinned on the extended card and which use
// it but are judged on the public card (no credentials). The JSON of an
// agent without extended cards is the contract's, and no rendering — JSON,
// text, page — carries the secret.
func TestTakeExtended(t *testing.T) {
	a, bare := newLedger(t), newLedger(t)
	creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": "Bearer %s"}}}`, a.srv.URL, extSecret), nil)
	must(t, err)
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}, Worker: func(o *worker.Options) { o.Fetch.Credentials = creds }})
	ctx := context.Background()
	extended := events.Requires{ExtendedCard: true}
	for _, s := range []events.Submitted{
		{TaskID: "ext1", AgentURL: a.srv.URL, SkillID: "audit-ledger", Requires: extended},
		{TaskID: "ext2", AgentURL: a.srv.URL, SkillID: "audit-ledger", Requires: extended},
		{TaskID: "plain", AgentURL: a.srv.URL, SkillID: "summarize"},
		{TaskID: "nocreds", AgentURL: bare.srv.URL, SkillID: "summarize", Requires: extended},
	} {
		must(t, r.Emit.Submitted(ctx, s))
		r.Eventually(s.TaskID+" pinned", func() bool { return len(r.Out().Events(events.TypePinned, s.TaskID)) == 1 })
	}
	// The vendor rotates the token: the extended card is refused.
	a.mu.Lock()
	a.token = "Bearer rotated"
	a.mu.Unlock()
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ext1", AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}))
	r.Eventually("card.unreachable", func() bool { return len(r.Out().Unreachable("ext1")) == 1 })
	r.Drained(t, servicetest.WaitTimeout)

	pubDigest, _ := detector.Digest(a.public())
	extDigest, _ := detector.Digest(a.extended())
	bareDigest, _ := detector.Digest(bare.public())
	impactOfExtended(t, ctx, impact.Source{Pins: r.Stores.Pins, Cards: r.Stores.Cards}, a.srv.URL, a.public(), a.extended())
	src := fresh(r.JS, r.Config, r.Stores, r.Stores.Cards)
	for _, name := range []string{"first census", "again"} {
		t.Run(name, func(t *testing.T) {
			f, err := census.Take(ctx, src, census.Options{})
			must(t, err)
			by := map[string]census.Agent{}
			for _, ag := range f.Agents {
				by[ag.AgentURL] = ag
			}
			ga, gb := by[a.srv.URL], by[bare.srv.URL]
			if ga.Digest != pubDigest || ga.Version != "1.0.0" || ga.UnreachableSince != nil {
				t.Errorf("agent a: live %s %s unreachable %v, want its public card %s 1.0.0, reachable", ga.Digest, ga.Version, ga.UnreachableSince, pubDigest)
			}
			if e := ga.Extended; e == nil || e.Digest != extDigest || e.Version != "2.0.0" || e.UnreachableSince == nil || e.Unreachable != string(fetcher.ReasonUnauthorized) {
				t.Errorf("agent a: extended %+v, want %s 2.0.0 unreachable (unauthorized)", e, extDigest)
			}
			wantA := []census.CardTasks{
				{Digest: extDigest, Version: "2.0.0", Count: 2, Live: true, Extended: events.ExtendedPinned},
				{Digest: pubDigest, Version: "1.0.0", Count: 1, Live: true},
			}
			wantB := []census.CardTasks{{Digest: bareDigest, Version: "1.0.0", Count: 1, Live: true, Extended: events.ExtendedUnavailable}}
			if !sameTasks(ga.Tasks, wantA) || !sameTasks(gb.Tasks, wantB) || gb.Extended != nil {
				t.Errorf("tasks: a %+v, b %+v (extended %+v); want a %+v, b %+v", ga.Tasks, gb.Tasks, gb.Extended, wantA, wantB)
			}
			if p, u := ga.ExtendedTasks(); p != 2 || u != 0 {
				t.Errorf("agent a: %d pinned on the extended card, %d unavailable", p, u)
			}

			var js, text, page bytes.Buffer
			must(t, f.WriteJSON(&js))
			must(t, f.WriteText(&text))
			must(t, f.WriteHTML(&page, 0))
			var doc struct {
				Agents []map[string]json.RawMessage `json:"agents"`
			}
			must(t, json.Unmarshal(js.Bytes(), &doc))
			for _, ag := range doc.Agents {
				_, has := ag["extended"]
				if want := string(ag["agentUrl"]) == fmt.Sprintf("%q", a.srv.URL); has != want || len(ag) != 7+boolInt(has) {
					t.Errorf("agent JSON %s: %d members, extended %v", ag["agentUrl"], len(ag), has)
				}
			}
			for _, want := range []string{"authenticated extended cards", "2 on live extended, 1 on live",
				"1 extended unavailable, on live", "unreachable since", "(unauthorized)"} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("text lacks %q:\n%s", want, text.String())
				}
			}
			for _, want := range []string{"<h2>authenticated extended cards</h2>", "2 task(s) on live extended", "(unauthorized)"} {
				if !strings.Contains(page.String(), want) {
					t.Errorf("page lacks %q", want)
				}
			}
			for what, out := range map[string]string{"json": js.String(), "text": text.String(), "html": page.String()} {
				if strings.Contains(out, extSecret) {
					t.Errorf("the secret is in the fleet %s", what)
				}
			}
		})
	}
}

// TestTakeExtended's pins, as the worker made them, through impact: a
// proposed public card judges the public pin and lists the extended pins as
// not judged; --extended the reverse. Neither report carries the secret.
func impactOfExtended(t *testing.T, ctx context.Context, src impact.Source, agent string, public, extended []byte) {
	for _, tc := range []struct {
		card              []byte
		ext               bool
		judged, notJudged int
	}{{public, false, 1, 2}, {extended, true, 2, 1}} {
		rep, err := impact.Assess(ctx, src, agent, tc.card, impact.Options{Extended: tc.ext})
		must(t, err)
		if len(rep.Tasks) != tc.judged || len(rep.Skipped) != tc.notJudged || rep.Counts.Continue != tc.judged {
			t.Errorf("impact (extended %v): tasks %+v, skipped %+v, counts %+v", tc.ext, rep.Tasks, rep.Skipped, rep.Counts)
		}
		b, err := json.Marshal(rep)
		must(t, err)
		if strings.Contains(fmt.Sprintf("%s %+v", b, rep), extSecret) {
			t.Error("the secret is in the impact report")
		}
	}
}

func sameTasks(got, want []census.CardTasks) bool {
	return fmt.Sprint(got) == fmt.Sprint(want)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fakeAgents is how many agent URLs the adversary of
// TestAdversaryMetricLabels makes up.
const fakeAgents = 10_000

// TestAdversaryMetricLabels is issue 19's row 9, as a publisher would do
// it: any client allowed to publish lifecycle events submits tasks for
// 10,000 agent URLs it made up (each with a client card, so nothing is
// fetched), the workers pin them all, and /metrics — the workers'
// collectors and the census, in one registry as serve has them — is
// scraped before and after. The number of series must not move: no label
// of carddrift's metrics takes its values from publishers.
func TestAdversaryMetricLabels(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := r.Metrics
	reg.MustRegister(m.Events, m.Fetches, m.Drift, m.Published, m.DeadLetters, m.EventTime, m.FetchTime)
	src := fresh(r.JS, r.Config, r.Stores, r.Stores.Cards)
	// Every scrape takes a census to the end: the collector's own timeout
	// (10 s) would, on a loaded machine, serve the previous census of 10
	// pins after 10,000 — the labels are under test, not that timeout.
	reg.MustRegister(census.NewCollector(func(ctx context.Context) (*census.Fleet, error) {
		return census.Take(context.WithoutCancel(ctx), src, census.Options{})
	}, time.Nanosecond))

	// Publish submissions for agents [from, to) from 8 publishers at once
	// and wait until every one is handled.
	submit := func(from, to int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for p := range 8 {
			wg.Go(func() {
				for i := from + p; i < to; i += 8 {
					agent := fmt.Sprintf("https://fake-%05d.attacker.example", i)
					err := r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprintf("t%05d", i), AgentURL: agent, SkillID: "summarize",
						Card: []byte(strings.ReplaceAll(servicetest.WriteupT0, "AGENT", agent))})
					if err == nil {
						// Each publisher waits for its event to be stored, at
						// the pace the workers keep up with: a burst beyond it
						// would be redelivered and add outcomes (retry, stale)
						// that these counts do not expect.
						err = r.Emit.Flush(ctx)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Every submission handled and acknowledged (a count of handled ones
		// would count twice one redelivered while the burst is worked off).
		r.Drained(t, 4*time.Minute)
	}

	submit(0, 10)
	before, pins := series(t, reg)
	if pins != 10 {
		t.Fatalf("after 10 agents the census counts %v pinned tasks, want 10", pins)
	}
	submit(10, fakeAgents)
	after, pins := series(t, reg)
	if pins != fakeAgents {
		t.Fatalf("after %d agents the census counts %v pinned tasks", fakeAgents, pins)
	}
	t.Logf("series: %d after 10 fake agents, %d after %d", before, after, fakeAgents)
	if after != before {
		t.Errorf("series = %d after %d fake agents, %d after 10: a label takes its values from publishers", after, fakeAgents, before)
	}
}

// series scrapes reg and returns the number of series its exposition holds
// (a histogram is one per bucket, +Inf, sum and count) and the pinned tasks
// the census exported (carddrift_pins, or on e91b0a3 the sum of
// carddrift_agent_pins).
func series(t *testing.T, reg *prometheus.Registry) (int, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	n, pins := 0, 0.0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				n += len(m.GetHistogram().GetBucket()) + 3
			default:
				n++
			}
			switch mf.GetName() {
			case "carddrift_pins", "carddrift_agent_pins":
				pins += m.GetGauge().GetValue()
			}
		}
	}
	return n, pins
}

// TestAdversaryFetchStatusLabels: an agent's card endpoint is the
// attacker's too. One that answers every fetch with another 2xx status
// (200, 201, … 229), card and all (but 204's body is dropped), must not mint a series of
// carddrift_fetches_total per status: result is 200 or 304 (or an
// unreachable reason), whatever the agent says.
func TestAdversaryFetchStatusLabels(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
	ctx := context.Background()
	var requests atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != fetcher.WellKnownPath {
			http.NotFound(w, req)
			return
		}
		n := requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(200 + int(n-1)%30)
		w.Write([]byte(strings.ReplaceAll(servicetest.WriteupT0, "AGENT", srv.URL)))
	}))
	t.Cleanup(srv.Close)
	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "t1", AgentURL: srv.URL, SkillID: "summarize"}))
	r.Eventually("the pin", func() bool { return requests.Load() >= 1 })
	r.Drained(t, servicetest.WaitTimeout)
	for i := range 30 {
		n := requests.Load()
		must(t, r.Emit.Request(ctx, events.Request{TaskID: "t1", AgentURL: srv.URL, Method: "message/stream", Attempt: 1}))
		r.Eventually(fmt.Sprintf("fetch %d", i+2), func() bool { return requests.Load() > n })
		r.Drained(t, servicetest.WaitTimeout)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Metrics.Fetches)
	mfs, err := reg.Gather()
	must(t, err)
	var results []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				results = append(results, l.GetValue())
			}
		}
	}
	t.Logf("%d fetches with %d statuses; carddrift_fetches_total results %v", requests.Load(), min(requests.Load(), 30), results)
	allowed := map[string]bool{"200": true, "304": true, "error": true}
	for _, reason := range fetcher.Reasons() {
		allowed[string(reason)] = true
	}
	for _, res := range results {
		if !allowed[res] {
			t.Errorf("carddrift_fetches_total{result=%q}: the agent's status became a label value", res)
		}
	}
}
