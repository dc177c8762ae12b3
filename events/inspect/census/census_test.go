package census_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
	"github.com/carddrift/carddrift/store/memstore"
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

// fresh is a Source whose Tally is new, following the pins, the leases and
// the card stream: its census reads everything, as carddrift fleet's does,
// and is the oracle of a Tally kept across censuses.
func fresh(js jetstream.JetStream, cfg store.Config, st *store.Stores[task.Pin], cards store.Cards) census.Source {
	return census.Source{Cards: cards, Tally: census.NewTally(js, st.Pins.KV(), census.TallyOptions{Leases: st.Leases.KV(), Events: cfg.EventsStream})}
}

// digestA and digestB are two card digests; TestTallyReadsChanges stores
// bodies under them, the other tests pin them without bodies.
var (
	digestA = "sha256:" + strings.Repeat("a", 64)
	digestB = "sha256:" + strings.Repeat("b", 64)
)

// countingCards counts the bodies a census reads.
type countingCards struct {
	store.Cards
	read atomic.Int64
}

func (c *countingCards) Get(ctx context.Context, digest string) ([]byte, error) {
	c.read.Add(1)
	return c.Cards.Get(ctx, digest)
}

func pinOn(id string, agent int, digest string) task.Pin {
	return task.Pin{TaskID: id, AgentURL: fmt.Sprintf("https://agent-%02d.example", agent), Digest: digest}
}

// TestTallyReadsChanges: with 2,000 pins on 20 agents, a fresh Tally reads
// all 2,000 pins at every census; a kept one reads them once, then only
// what changed — nothing when nothing did, one pin for one re-pin to
// another agent (its count moves) or one delete — and the census it gives
// is the fresh one's, byte for byte.
func TestTallyReadsChanges(t *testing.T) {
	js, cfg, st := openStores(t)
	ctx := context.Background()
	var err error
	const pins, agents = 2000, 20
	for i := range pins {
		digest := digestA
		if i%3 == 0 {
			digest = digestB
		}
		_, err := st.Pins.Create(ctx, pinOn(fmt.Sprintf("t%04d", i), i%agents, digest))
		must(t, err)
	}
	must(t, st.Cards.Put(ctx, digestA, []byte(`{"name":"A","version":"1.0.0","skills":[]}`)))
	must(t, st.Cards.Put(ctx, digestB, []byte(`{"name":"A","version":"2.0.0","skills":[]}`)))
	cards := &countingCards{Cards: st.Cards}
	incr := fresh(js, cfg, st, cards)
	tally := incr.Tally
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	opts := census.Options{Now: func() time.Time { return now }}

	// take takes a fresh census and the kept Tally's, checks they agree,
	// and returns the pins each read, and the agent's count.
	take := func(step string, agent string) (scanRead, tallyRead int64, count int) {
		t.Helper()
		scan := fresh(js, cfg, st, st.Cards)
		fs, err := census.Take(ctx, scan, opts)
		must(t, err)
		fi, err := census.Take(ctx, incr, opts)
		must(t, err)
		js1, _ := json.Marshal(fs)
		js2, _ := json.Marshal(fi)
		if !bytes.Equal(js1, js2) {
			t.Errorf("%s: the Tally's census differs from a fresh one's:\n%s\n%s", step, js2, js1)
		}
		for _, a := range fi.Agents {
			if a.AgentURL == agent {
				count = a.Pins()
			}
		}
		return int64(scan.Tally.Stats().LastRead), int64(tally.Stats().LastRead), count
	}
	agent0, agent1 := "https://agent-00.example", "https://agent-01.example"

	s, n, c := take("initial", agent0)
	t.Logf("initial census: a fresh Tally read %d pins, Tally %d", s, n)
	if s != pins || n != pins || c != pins/agents {
		t.Errorf("initial census: a fresh Tally read %d, Tally %d, want %d each; agent 0 has %d pins, want %d", s, n, pins, c, pins/agents)
	}
	s, n, _ = take("unchanged", agent0)
	t.Logf("census with no change: a fresh Tally read %d pins, Tally %d", s, n)
	if s != pins || n != 0 {
		t.Errorf("census with no change: a fresh Tally read %d (want %d), Tally %d (want 0)", s, pins, n)
	}

	// Re-pin t0000 (agent 0) on agent 1.
	p, rev, err := st.Pins.Get(ctx, "t0000")
	must(t, err)
	p.AgentURL = agent1
	_, err = st.Pins.Update(ctx, p, rev)
	must(t, err)
	s, n, c = take("re-pin", agent0)
	_, _, c1 := take("re-pin (again)", agent1)
	t.Logf("census after one re-pin: a fresh Tally read %d pins, Tally %d", s, n)
	if s != pins || n != 1 || c != pins/agents-1 || c1 != pins/agents+1 {
		t.Errorf("re-pin: a fresh Tally read %d, Tally %d (want 1); agent 0 has %d, agent 1 %d", s, n, c, c1)
	}

	must(t, st.Pins.Delete(ctx, "t0001"))
	s, n, c = take("delete", agent1)
	if s != pins || n != 1 || c != pins/agents { // the fresh read includes the delete's marker
		t.Errorf("delete: a fresh Tally read %d (want %d), Tally %d (want 1); agent 1 has %d, want %d", s, pins, n, c, pins/agents)
	}
	// The bodies of the two pinned cards were read by the first census
	// only: the versions are memoized.
	if n := cards.read.Load(); n != 2 {
		t.Errorf("the censuses with a Tally read %d card bodies, want 2 (once each)", n)
	}
	if st := tally.Stats(); st.Loads != 1 || st.Pins != pins-1 || st.Groups != 2*agents {
		t.Errorf("stats = %+v", st)
	}
}

// pinsBucket makes a pins bucket of cfg on a server of its own.
func pinsBucket(t testing.TB, cfg jetstream.KeyValueConfig) (jetstream.JetStream, jetstream.KeyValue, *store.KVPins[task.Pin]) {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	kv, err := js.CreateKeyValue(context.Background(), cfg)
	must(t, err)
	return js, kv, store.NewKVPins[task.Pin](kv)
}

// TestTallyDroppedByLimit: a bucket that drops its oldest pins for a limit
// (here MaxMsgs; a byte limit drops the same way) writes no marker, yet the
// Tally uncounts them.
func TestTallyDroppedByLimit(t *testing.T) {
	ctx := context.Background()
	js, kv, pins := pinsBucket(t, jetstream.KeyValueConfig{Bucket: "pins-limited", History: 1})
	// Limit the stream behind the bucket to 10 messages, oldest dropped.
	s, err := js.Stream(ctx, "KV_pins-limited")
	must(t, err)
	sc := s.CachedInfo().Config
	sc.MaxMsgs, sc.Discard = 10, jetstream.DiscardOld
	_, err = js.UpdateStream(ctx, sc)
	must(t, err)
	put := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := pins.Create(ctx, pinOn(fmt.Sprintf("t%02d", i), i%2, digestA))
			must(t, err)
		}
	}
	tally := census.NewTally(js, kv, census.TallyOptions{})
	put(0, 8)
	must(t, tally.Refresh(ctx))
	if st := tally.Stats(); st.Pins != 8 {
		t.Fatalf("stats = %+v, want 8 pins", st)
	}
	put(8, 15) // 15 written, the 5 oldest dropped
	must(t, tally.Refresh(ctx))
	st := tally.Stats()
	n := 0
	must(t, pins.Scan(ctx, func(task.Pin, uint64) error { n++; return nil }))
	if st.Pins != n || n != 10 || st.Dropped != 5 || st.Loads != 1 {
		t.Errorf("stats = %+v; the bucket holds %d pins", st, n)
	}
}

// TestTallyExpiry: a pin the bucket's TTL expires is uncounted from the
// expiry's marker.
func TestTallyExpiry(t *testing.T) {
	ctx := context.Background()
	js, kv, pins := pinsBucket(t, jetstream.KeyValueConfig{Bucket: "pins-ttl", History: 1, TTL: time.Second, LimitMarkerTTL: time.Minute})
	tally := census.NewTally(js, kv, census.TallyOptions{})
	_, err := pins.Create(ctx, pinOn("t1", 0, digestA))
	must(t, err)
	must(t, tally.Refresh(ctx))
	if st := tally.Stats(); st.Pins != 1 {
		t.Fatalf("stats = %+v, want 1 pin", st)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		must(t, tally.Refresh(ctx))
		if tally.Stats().Pins == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired pin is still counted: %+v", tally.Stats())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := tally.Stats(); st.Dropped != 0 || st.Loads != 1 || st.Read < 2 {
		t.Errorf("stats = %+v: the marker, not a limit, should have uncounted it", st)
	}
}

// TestTallyResync: after Resync the whole bucket is read again.
func TestTallyResync(t *testing.T) {
	ctx := context.Background()
	js, kv, pins := pinsBucket(t, jetstream.KeyValueConfig{Bucket: "pins-resync", History: 1})
	for i := range 3 {
		_, err := pins.Create(ctx, pinOn(fmt.Sprintf("t%d", i), 0, digestA))
		must(t, err)
	}
	var now atomic.Int64
	tally := census.NewTally(js, kv, census.TallyOptions{Resync: time.Minute, Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	must(t, tally.Refresh(ctx))
	must(t, tally.Refresh(ctx))
	if st := tally.Stats(); st.Loads != 1 || st.LastRead != 0 || st.Pins != 3 {
		t.Fatalf("stats = %+v", st)
	}
	now.Add(61)
	must(t, tally.Refresh(ctx))
	if st := tally.Stats(); st.Loads != 2 || st.LastRead != 3 || st.Pins != 3 {
		t.Errorf("after Resync: stats = %+v", st)
	}
}

// BenchmarkTake takes serve's census of 10,000 pins on 1,000 agents (each
// on a card of its own, with a lease), one pin re-pinned between censuses:
// with a fresh Tally each time (carddrift fleet's) and with a kept one.
// pins-read/op, leases-read/op and bodies-read/op are what one census read
// of the pins and leases buckets and of the card bodies (the live cards'
// are read at every census); tally-B/pin is the heap the Tally keeps
// per pin (all of it, groups and memo included, divided by the pins).
func BenchmarkTake(b *testing.B) {
	js, cfg, st := openStores(b)
	ctx := context.Background()
	const pins, agents = 10_000, 1000
	digest := func(agent int) string { return fmt.Sprintf("sha256:%064x", agent) }
	for i := range agents {
		must(b, st.Cards.Put(ctx, digest(i), []byte(fmt.Sprintf(`{"name":"A","version":"1.%d","skills":[]}`, i))))
	}
	for i := range pins {
		_, err := st.Pins.Create(ctx, pinOn(fmt.Sprintf("t%05d", i), i%agents, digest(i%agents)))
		must(b, err)
	}
	fetched := time.Now().UTC()
	for i := range agents {
		_, err := st.Leases.Create(ctx, store.Lease{CardURL: fmt.Sprintf("https://agent-%02d.example/.well-known/agent-card.json", i),
			Digest: digest(i), FetchedAt: fetched, ChangedAt: fetched, MaxAge: time.Minute})
		must(b, err)
	}
	for _, tc := range []struct {
		name  string
		tally bool
	}{{"fresh", false}, {"tally", true}} {
		b.Run(tc.name, func(b *testing.B) {
			cards := &countingCards{Cards: st.Cards}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			src := fresh(js, cfg, st, cards)
			_, err := census.Take(ctx, src, census.Options{}) // the initial load
			must(b, err)
			runtime.GC()
			runtime.ReadMemStats(&m1)
			heap := m1.HeapAlloc - min(m0.HeapAlloc, m1.HeapAlloc)
			var read, leaseRead uint64
			cards0 := cards.read.Load()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				p, rev, err := st.Pins.Get(ctx, fmt.Sprintf("t%05d", i%pins))
				must(b, err)
				p.AgentURL = fmt.Sprintf("https://agent-%02d.example", (i+1)%agents)
				_, err = st.Pins.Update(ctx, p, rev)
				must(b, err)
				if !tc.tally {
					src = fresh(js, cfg, st, cards) // carddrift fleet's: read everything
				}
				if _, err := census.Take(ctx, src, census.Options{}); err != nil {
					b.Fatal(err)
				}
				read, leaseRead = read+src.Tally.Stats().LastRead, leaseRead+src.Tally.Stats().LeasesLastRead
			}
			b.ReportMetric(float64(leaseRead)/float64(b.N), "leases-read/op")
			b.ReportMetric(float64(read)/float64(b.N), "pins-read/op")
			b.ReportMetric(float64(cards.read.Load()-cards0)/float64(b.N), "bodies-read/op")
			if tc.tally {
				b.ReportMetric(float64(heap)/pins, "tally-B/pin")
			}
		})
	}
}

// FuzzTally drives one pins bucket with the writes a byte string encodes —
// pins created, re-pinned to another agent or card, deleted, purged, and
// values that are not pins — refreshing a Tally between some of them: after
// every Refresh the Tally's census equals a fresh Tally's, its counts per
// agent a scan's of the bucket, and it finds undecodable values when the
// scan does.
//
// Each op is 2 bytes: op%5 (0 put, 1 re-pin, 2 delete, 3 purge, 4 garbage
// value), then the key (b%16), agent (b/16%4) and digest (b/64%2); op/5%2
// refreshes after it.
func FuzzTally(f *testing.F) {
	ctx := context.Background()
	js, kv, pins := pinsBucket(f, jetstream.KeyValueConfig{Bucket: "pins-fuzz", History: 1})
	tally := census.NewTally(js, kv, census.TallyOptions{Resync: -1})
	cards := memstore.NewCards()
	f.Add([]byte{0, 0x11, 5, 0x11, 1, 0x52, 5, 0})
	f.Add([]byte{0, 1, 0, 2, 7, 1, 3, 2, 9, 1, 4, 3, 5, 0})
	f.Add([]byte{4, 5, 5, 5, 0, 5, 6, 5, 9, 9})
	opts := census.Options{Now: func() time.Time { return time.Unix(0, 0) }}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		check := func() {
			t.Helper()
			must(t, tally.Refresh(ctx))
			scan, serr := census.Take(ctx, census.Source{Cards: cards, Tally: census.NewTally(js, kv, census.TallyOptions{})}, opts)
			incr, ierr := census.Take(ctx, census.Source{Cards: cards, Tally: tally}, opts)
			if scan == nil || incr == nil {
				t.Fatalf("census: %v, %v", serr, ierr)
			}
			a, _ := json.Marshal(scan)
			b, _ := json.Marshal(incr)
			if !bytes.Equal(a, b) || len(scan.Problems) != len(incr.Problems) {
				t.Fatalf("Tally's census %s (problems %q), a fresh one's %s (problems %q)", b, incr.Problems, a, scan.Problems)
			}
			want, got := map[string]int{}, map[string]int{}
			err := pins.Scan(ctx, func(p task.Pin, _ uint64) error { want[p.AgentURL]++; return nil })
			for _, ag := range incr.Agents {
				got[ag.AgentURL] = ag.Pins()
			}
			if !reflect.DeepEqual(got, want) || errors.Is(err, store.ErrCorrupt) != (len(incr.Problems) > 0) {
				t.Fatalf("Tally's pins per agent %v (problems %q), the bucket's %v (%v)", got, incr.Problems, want, err)
			}
		}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			id := fmt.Sprintf("t%d", arg%16)
			key := store.EncodeKey(id)
			p := pinOn(id, int(arg/16%4), []string{digestA, digestB}[arg/64%2])
			var err error
			switch op % 5 {
			case 0, 1:
				if op%5 == 1 {
					p.AgentURL = fmt.Sprintf("https://agent-%02d.example", (arg/16+1)%4)
				}
				raw, _ := json.Marshal(p)
				_, err = kv.Put(ctx, key, raw)
			case 2:
				err = kv.Delete(ctx, key)
			case 3:
				err = kv.Purge(ctx, key)
			case 4:
				_, err = kv.Put(ctx, key, []byte(`{"agentUrl":`))
			}
			must(t, err)
			if op/5%2 == 1 {
				check()
			}
		}
		check()
	})
}

// TestTallyBucketRecreated: a pins bucket deleted and made again starts
// its sequences over; the Tally reads it from scratch instead of waiting
// for sequences it has already read.
func TestTallyBucketRecreated(t *testing.T) {
	_, _, js := natstest.StartJetStream(t)
	ctx := context.Background()
	kvc := jetstream.KeyValueConfig{Bucket: "pins-again", History: 1}
	kv, err := js.CreateKeyValue(ctx, kvc)
	must(t, err)
	tally := census.NewTally(js, kv, census.TallyOptions{})
	for i := range 3 {
		_, err := store.NewKVPins[task.Pin](kv).Create(ctx, pinOn(fmt.Sprintf("t%d", i), 0, digestA))
		must(t, err)
	}
	must(t, tally.Refresh(ctx))
	must(t, js.DeleteKeyValue(ctx, kvc.Bucket))
	// Deleting an account's last stream, the server removes the account's
	// streams directory as it goes, racing a create right after it: "could
	// not create storage directory … no such file or directory" (its log),
	// 500 err_code 10049 to the client (seen once in CI).
	natstest.Eventually(t, 10*time.Second, "the bucket made again", func() bool {
		kv, err = js.CreateKeyValue(ctx, kvc)
		return err == nil
	})
	// More writes than the first bucket had: its sequences overtake.
	for i := range 5 {
		_, err = store.NewKVPins[task.Pin](kv).Create(ctx, pinOn(fmt.Sprintf("u%d", i), 1, digestA))
		must(t, err)
	}
	must(t, store.NewKVPins[task.Pin](kv).Delete(ctx, "u0"))
	must(t, tally.Refresh(ctx))
	if st := tally.Stats(); st.Pins != 4 || st.Loads != 2 {
		t.Errorf("after the bucket was made again: stats = %+v, want 4 pins from a second load", st)
	}
}

// TestTallyObserved: with the card stream followed, a census reads each
// agent's last card.observed once, then only the observations published
// since, and names the agents they show as a fresh Tally does.
func TestTallyObserved(t *testing.T) {
	js, cfg, st := openStores(t)
	ctx := context.Background()
	var err error
	pub, err := publish.New(js, "urn:carddrift:test")
	must(t, err)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	observe := func(agent int, digest string) {
		t.Helper()
		url := fmt.Sprintf("https://agent-%02d.example", agent)
		_, err := pub.Publish(ctx, events.Event{Data: events.Observed{AgentURL: url, CardURL: url + "/.well-known/agent-card.json",
			Digest: digest, Status: 200, FetchedAt: at}})
		must(t, err)
		at = at.Add(time.Second)
	}
	for i := range 5 {
		observe(i, digestA)
		observe(i, digestB) // the last of each agent
	}
	incr := fresh(js, cfg, st, st.Cards)
	tally := incr.Tally
	opts := census.Options{Now: func() time.Time { return at }}
	take := func(step string, wantRead uint64) {
		t.Helper()
		want, err := census.Take(ctx, fresh(js, cfg, st, st.Cards), opts)
		must(t, err)
		got, err := census.Take(ctx, incr, opts)
		must(t, err)
		if !reflect.DeepEqual(got.Agents, want.Agents) {
			t.Errorf("%s: census with a Tally\n%+v\nwant\n%+v", step, got.Agents, want.Agents)
		}
		if n := tally.Stats().ObservedLastRead; n != wantRead {
			t.Errorf("%s: the Tally read %d observations, want %d", step, n, wantRead)
		}
	}
	take("first", 5)
	take("nothing new", 0)
	observe(2, digestA)
	observe(7, digestA)
	take("two observations", 2)
}

// openStores opens the stores on an embedded JetStream server of their own.
func openStores(tb testing.TB) (jetstream.JetStream, store.Config, *store.Stores[task.Pin]) {
	tb.Helper()
	_, _, js := natstest.StartJetStream(tb)
	cfg := store.DefaultConfig()
	st, err := store.Open[task.Pin](context.Background(), js, cfg)
	must(tb, err)
	return js, cfg, st
}
