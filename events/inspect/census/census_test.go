package census_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
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
	"github.com/carddrift/carddrift/events/inspect/render/rendertest"
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

// hostileFleet is a census that makes every part of the fleet view show:
// an agent whose card is named rendertest.HostileName, whose URL holds
// markup and whose replicas disagree, with tasks on its live card, on an
// older one and pending; an agent down; one never fetched; a skill two of
// them offer under different contracts (a list, a flag, a missing value)
// and one they agree on.
func hostileFleet(t testing.TB) *census.Fleet {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	down := t0.Add(time.Minute)
	a, b := "https://a.example/<x>", "https://b.example"
	// The split brain as fleet --json shows it: two fetches of one digest.
	var split census.SplitBrain
	if err := json.Unmarshal([]byte(`{"since":"2026-03-01T12:00:00Z","digests":[`+
		`{"digest":"sha256:aa","count":2,"firstSeen":"2026-03-01T12:00:00Z","lastSeen":"2026-03-01T12:01:00Z"}]}`), &split); err != nil {
		t.Fatal(err)
	}
	return &census.Fleet{Taken: t0.Add(time.Hour), Window: 5 * time.Minute,
		Agents: []census.Agent{
			{AgentURL: a, Digest: "sha256:0123456789abcdef0123", Version: "1.0", ProtocolVersions: []string{"0.3", "1.0"}, Name: rendertest.HostileName,
				Tasks:      []census.CardTasks{{Digest: "sha256:0123456789abcdef0123", Version: "1.0", Count: 3, Live: true}, {Digest: "sha256:fedcba", Version: "0.9", Count: 2}, {Count: 1}},
				SplitBrain: &split,
				LastChange: t0, Skills: []string{"s1"}},
			{AgentURL: b, UnreachableSince: &down, Unreachable: "timeout", Skills: []string{"s1"}},
			{AgentURL: "https://c.example", Version: "2", Digest: "sha256:cc"},
		},
		Skills: []detector.SharedSkill{
			{ID: "s1", Agents: []string{a, b}, Differences: []detector.SkillDifference{
				{Field: "outputModes", Values: map[string]any{a: []string{"a", "b"}, b: []string{"c"}}},
				{Field: "streaming", Values: map[string]any{a: true, b: false}},
				{Field: "name", Values: map[string]any{a: "x"}},
			}},
			{ID: "s2", Agents: []string{"a", "b"}, Consistent: true},
		}}
}

// TestRenderGolden: the fleet view's text, JSON and page are, byte for
// byte, what carddrift fleet printed before the renderers moved out of the
// command (testdata/render; the page's own part, rendertest.GoldenPage).
// With serve's refresh the page is the same but for the refresh: the meta
// element (TestRenderHTMLEscapes) and a sentence.
func TestRenderGolden(t *testing.T) {
	fl, empty := hostileFleet(t), &census.Fleet{}
	page := func(refresh time.Duration) []byte {
		var b bytes.Buffer
		if err := fl.WriteHTML(&b, refresh); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for _, c := range []struct {
		file  string
		write func(io.Writer) error
	}{
		{"fleet.txt", fl.WriteText},
		{"fleet.json", fl.WriteJSON},
		{"fleet-empty.txt", empty.WriteText},
	} {
		t.Run(c.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.write(&b); err != nil {
				t.Fatal(err)
			}
			rendertest.Golden(t, filepath.Join("testdata", "render", c.file), b.Bytes())
		})
	}
	rendertest.GoldenPage(t, filepath.Join("testdata", "render", "fleet.html"), page(0))
	refreshing := strings.Replace(string(page(10*time.Second)), `<meta http-equiv="refresh" content="10"/>`+"\n", "", 1)
	refreshing = strings.Replace(refreshing, "; this page refreshes every 10s</p>", "</p>", 1)
	if refreshing != string(page(0)) {
		t.Errorf("the page with a 10s refresh differs from the page without in more than the refresh:\n%s", refreshing)
	}
}

// TestRenderHTMLEscapes: on the fleet page the card's name is text, never
// an element (one script element, the page's own), in the page source, in
// an XML parser and in headless Chromium; the page is one self-contained
// document; it refreshes itself only when asked to.
func TestRenderHTMLEscapes(t *testing.T) {
	fl := hostileFleet(t)
	for _, refresh := range []time.Duration{0, 10 * time.Second} {
		var b bytes.Buffer
		if err := fl.WriteHTML(&b, refresh); err != nil {
			t.Fatal(err)
		}
		page := filepath.Join(t.TempDir(), "fleet.html")
		if err := os.WriteFile(page, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		rendertest.CheckPage(t, page, 1)
		text, elements := rendertest.PageText(t, b.Bytes())
		if scripts := elements["script"]; scripts != 1 || elements["x"] != 0 {
			t.Errorf("refresh %v: %d <script> and %d <x> elements, want the page's own script only", refresh, scripts, elements["x"])
		}
		if !strings.Contains(text, rendertest.HostileName) || !strings.Contains(text, "https://a.example/<x>") {
			t.Errorf("refresh %v: the page text does not show the card name and the agent URL", refresh)
		}
		if got, want := strings.Contains(b.String(), `http-equiv="refresh" content="10"`), refresh > 0; got != want {
			t.Errorf("refresh %v: the page refreshes itself: %v, want %v", refresh, got, want)
		}
		if refresh == 0 {
			rendertest.RenderHostile(t, page, "fleet")
		}
	}
}

// TestRenderWriteError: the renderers return the writer's error.
func TestRenderWriteError(t *testing.T) {
	fl := hostileFleet(t)
	for name, write := range map[string]func(io.Writer) error{
		"WriteText": fl.WriteText, "WriteJSON": fl.WriteJSON,
		"WriteHTML": func(w io.Writer) error { return fl.WriteHTML(w, 0) },
	} {
		if err := write(rendertest.FailingWriter{}); !errors.Is(err, rendertest.ErrWrite) {
			t.Errorf("%s(a failing writer) = %v, want %v", name, err, rendertest.ErrWrite)
		}
	}
}
