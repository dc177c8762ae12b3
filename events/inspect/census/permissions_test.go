package census_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

// TestCensusUnderShippedPermissions: serve's census (a Tally following the
// pins, the leases and the card stream) and the scan behind carddrift fleet
// need nothing the shipped CARDDRIFT user may not publish: a census that
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

	tally := census.NewTally(sh.JS, st.Pins.KV(), census.TallyOptions{Leases: st.Leases.KV(), Events: cfg.EventsStream})
	sources := map[string]census.Source{
		"serve's census (a Tally)": {Pins: st.Pins, Leases: st.Leases, Cards: st.Cards, JS: sh.JS, Config: cfg, Tally: tally},
		"carddrift fleet (a scan)": {Pins: st.Pins, Leases: st.Leases, Cards: st.Cards, JS: sh.JS, Config: cfg},
	}
	for name, src := range sources {
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
