package census_test

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

// TestTake runs workers over three agents — one whose replicas come to
// disagree, one offering the same skill without streaming and with another
// kind of security, one down — and takes the census from the stores and the
// card stream.
func TestTake(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
	ctx := context.Background()
	a, b, c := servicetest.NewAgent(t, servicetest.WriteupT0), servicetest.NewAgent(t, servicetest.WriteupT40), servicetest.NewAgent(t, servicetest.WriteupT0)
	c.SetStatus(503)
	submit := func(task string, ag *servicetest.Agent, card []byte) {
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: ag.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Card: card}))
	}
	submit("a1", a, a.Served(servicetest.WriteupT0))
	submit("a2", a, a.Served(servicetest.WriteupT0))
	submit("b1", b, nil)
	submit("c1", c, nil)
	for _, card := range []string{servicetest.WriteupT40, servicetest.WriteupT0, servicetest.WriteupT40, servicetest.WriteupT0} {
		a.Set(card)
		n := a.Requests()
		must(t, r.Emit.Request(ctx, events.Request{TaskID: "a1", AgentURL: a.URL(), Method: "message/stream", Attempt: 1}))
		r.Eventually("the fetch", func() bool { return a.Requests() > n })
		r.Drained(t, servicetest.WaitTimeout)
	}
	f, err := census.Take(ctx, fresh(r.JS, r.Config, r.Stores, r.Stores.Cards), census.Options{})
	must(t, err)
	if len(f.Agents) != 3 {
		t.Fatalf("agents = %+v", f.Agents)
	}
	by := map[string]census.Agent{}
	for _, ag := range f.Agents {
		by[ag.AgentURL] = ag
	}
	ga, gb, gc := by[a.URL()], by[b.URL()], by[c.URL()]
	if ga.SplitBrain == nil || len(ga.SplitBrain.Digests) != 2 || gb.SplitBrain != nil {
		t.Errorf("split brain: a %+v, b %+v", ga.SplitBrain, gb.SplitBrain)
	}
	if ga.Pins() != 2 || gb.Pins() != 1 || gc.Pins() != 1 || len(ga.Tasks) != 1 || ga.Tasks[0].Version != "1.0.0" {
		t.Errorf("tasks: a %+v, b %+v, c %+v", ga.Tasks, gb.Tasks, gc.Tasks)
	}
	if gb.Digest == "" || gb.Version != "1.0.0" || !slices.Equal(gb.ProtocolVersions, []string{"1.0.0"}) || gb.LastChange.IsZero() {
		t.Errorf("b = %+v", gb)
	}
	if gc.UnreachableSince == nil || gc.Unreachable != "status" || gc.Digest != "" || gb.UnreachableSince != nil {
		t.Errorf("unreachable: c %+v, b %v", gc, gb.UnreachableSince)
	}
	if len(f.Skills) != 1 || f.Skills[0].ID != "summarize" || f.Skills[0].Consistent || f.InconsistentSkills() != 1 {
		t.Fatalf("skills = %+v", f.Skills)
	}
	var fields []string
	for _, d := range f.Skills[0].Differences {
		fields = append(fields, d.Field)
	}
	if !slices.Equal(fields, []string{"streaming", "security"}) {
		t.Errorf("differences = %v", fields)
	}

	// serve's census, with a Tally kept across censuses, is a fresh
	// Tally's, the first time and again, and reads nothing again.
	src := fresh(r.JS, r.Config, r.Stores, r.Stores.Cards)
	fixed := census.Options{Now: func() time.Time { return f.Taken }}
	want, err := census.Take(ctx, fresh(r.JS, r.Config, r.Stores, r.Stores.Cards), fixed)
	must(t, err)
	tally := src.Tally
	for i := range 2 {
		got, err := census.Take(ctx, src, fixed)
		must(t, err)
		if !reflect.DeepEqual(got.Agents, want.Agents) || !reflect.DeepEqual(got.Skills, want.Skills) {
			t.Errorf("census %d with a Tally:\n%+v\nwant\n%+v", i+1, got.Agents, want.Agents)
		}
	}
	if st := tally.Stats(); st.Leases == 0 || st.LeasesLastRead != 0 || st.LastRead != 0 || st.ObservedRead == 0 || st.ObservedLastRead != 0 {
		t.Errorf("with a Tally: stats %+v", st)
	}

	// The JSON is carddrift fleet --json's contract, key for key.
	raw, err := json.Marshal(f)
	must(t, err)
	var doc map[string][]map[string]any
	must(t, json.Unmarshal(raw, &doc))
	keys := func(m map[string]any) string { return strings.Join(slices.Sorted(maps.Keys(m)), ",") }
	if got := strings.Join(slices.Sorted(maps.Keys(doc)), ","); got != "agents,skills" {
		t.Errorf("top-level keys %s", got)
	}
	if got := keys(doc["agents"][0]); got != "agentUrl,digest,protocolVersions,splitBrain,tasks,unreachableSince,version" {
		t.Errorf("agent keys %s", got)
	}
	if got := keys(doc["skills"][0]); got != "agents,consistent,differences,id" {
		t.Errorf("skill keys %s", got)
	}

	// The gauges.
	col := census.NewCollector(func(ctx context.Context) (*census.Fleet, error) { return census.Take(ctx, src, census.Options{}) }, 0)
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	mfs, err := reg.Gather()
	must(t, err)
	got := map[string][]float64{}
	var perAgent *dto.Histogram
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) > 0 {
				t.Errorf("%s has labels %v", mf.GetName(), m.GetLabel())
			}
			got[mf.GetName()] = append(got[mf.GetName()], m.GetGauge().GetValue())
			if mf.GetName() == "carddrift_pins_per_agent" {
				perAgent = m.GetHistogram()
			}
		}
	}
	if !slices.Equal(got["carddrift_agents_inconsistent"], []float64{1}) || !slices.Equal(got["carddrift_skills_inconsistent"], []float64{1}) ||
		!slices.Equal(got["carddrift_pins"], []float64{4}) || !slices.Equal(got["carddrift_agents"], []float64{3}) ||
		!slices.Equal(got["carddrift_census_errors"], []float64{0}) {
		t.Errorf("gauges = %v", got)
	}
	// a has 2 pins, b and c one each: 2 agents ≤ 1, 3 ≤ 10 and above.
	var cum []uint64
	for _, b := range perAgent.GetBucket() {
		cum = append(cum, b.GetCumulativeCount())
	}
	if perAgent.GetSampleCount() != 3 || perAgent.GetSampleSum() != 4 || !slices.Equal(cum, []uint64{2, 3, 3, 3, 3, 3}) {
		t.Errorf("carddrift_pins_per_agent = count %d, sum %v, buckets %v", perAgent.GetSampleCount(), perAgent.GetSampleSum(), cum)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// An agent with several card URLs (a v0.2 agent: 404 at agent-card.json,
// its card at agent.json) is judged by the lease that saw it last.
func TestTakeSeveralCardURLs(t *testing.T) {
	ctx := context.Background()
	js, cfg, st := openStores(t)
	leases := st.Leases
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	card := []byte(`{"name":"A","version":"2","skills":[{"id":"s","name":"S"}]}`)
	digest, _ := detector.Digest(card)
	must(t, st.Cards.Put(ctx, digest, card))
	for _, tc := range []struct {
		name     string
		failedAt time.Time
		down     bool
	}{
		{"probe failed before the fetch", t0, false},
		{"failing now", t0.Add(time.Hour), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := "http://a" + strings.ReplaceAll(tc.name, " ", "-") + ".example"
			_, err := leases.Create(ctx, store.Lease{CardURL: host + "/.well-known/agent-card.json", FailReason: "status", FailStatus: 404,
				FailedAt: tc.failedAt, FailingSince: tc.failedAt, FailCount: 1})
			must(t, err)
			_, err = leases.Create(ctx, store.Lease{CardURL: host + "/.well-known/agent.json", Digest: digest, FetchedAt: t0.Add(time.Minute), ChangedAt: t0.Add(time.Minute)})
			must(t, err)
			f, err := census.Take(ctx, fresh(js, cfg, st, st.Cards), census.Options{Now: func() time.Time { return t0.Add(2 * time.Hour) }})
			must(t, err)
			var got *census.Agent
			for i := range f.Agents {
				if f.Agents[i].AgentURL == host {
					got = &f.Agents[i]
				}
			}
			if got == nil || got.Digest != digest || got.Version != "2" || (got.UnreachableSince != nil) != tc.down {
				t.Errorf("agent = %+v, want its card and down %v", got, tc.down)
			}
		})
	}
}

// TestCensusUnderShippedPermissions: a census (a Tally following the pins,
// the leases and the card stream, as serve's and carddrift fleet's) needs
// nothing the shipped CARDDRIFT user may not publish: a census that
// ran into a permission violation would leave /fleet and the census metrics
// of a deployed serve empty.
func TestCensusUnderShippedPermissions(t *testing.T) {
	sh := natstest.StartShipped(t, filepath.Join("..", "..", "..", "deployments", "nats", "accounts.conf"))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := store.DefaultConfig()
	cfg.StorageLimit = 96 << 20
	st, err := store.Open[task.Pin](ctx, sh.JS, cfg)
	must(t, err)
	card := []byte(`{"name":"A","version":"1.0.0","protocolVersion":"0.3.0","url":"https://a.example/a2a","skills":[]}`)
	digest, err := detector.Digest(card)
	must(t, err)
	must(t, st.Cards.Put(ctx, digest, card))
	const agent = "https://a.example"
	for _, id := range []string{"t1", "t2"} {
		_, err := st.Pins.Create(ctx, task.Pin{TaskID: id, AgentURL: agent, Digest: digest, PinnedAt: time.Now()})
		must(t, err)
	}
	_, err = st.Leases.Create(ctx, store.Lease{CardURL: agent + "/.well-known/agent-card.json", Digest: digest})
	must(t, err)
	pub, err := publish.New(sh.JS, "urn:carddrift:test")
	must(t, err)
	_, err = pub.Publish(ctx, events.Event{Data: events.Observed{AgentURL: agent, CardURL: agent + "/.well-known/agent-card.json",
		Digest: digest, Status: 200, FetchedAt: time.Now()}})
	must(t, err)

	src := fresh(sh.JS, cfg, st, st.Cards)
	{
		name := "the census"
		for range 2 { // the Tally's first read and a later one
			f, err := census.Take(ctx, src, census.Options{})
			if err != nil {
				t.Fatalf("%s: Take() under the shipped permissions: %v (violations: %v)", name, err, sh.Violations())
			}
			if len(f.Agents) != 1 || f.Agents[0].Pins() != 2 || f.Agents[0].Digest != digest {
				t.Fatalf("%s: agents = %+v, want %s with 2 pins on its live card", name, f.Agents, agent)
			}
		}
	}
	if v := sh.Violations(); len(v) > 0 {
		t.Fatalf("permission violations: %v", v)
	}
}
