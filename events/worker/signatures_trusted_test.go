package worker_test

import (
	"context"
	"testing"

	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

// trustedPin is a worker that trusts key a alone (no jku), an agent whose
// card a signed, and a task "victim" pinned on it by first fetch.
type trustedPin struct {
	r     *servicetest.Rig
	out   *servicetest.Collector
	agent *servicetest.Agent
	base  string
	a     servicetest.SigningKey
}

func newTrustedPin(t *testing.T) *trustedPin {
	t.Helper()
	a := servicetest.NewSigningKey(t, "a")
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}, Worker: func(o *worker.Options) {
		o.Fetch.Signatures = fetcher.SignatureOptions{Trusted: signature.NewKeySet(a.Pub), JKU: fetcher.JKUOff}
	}})
	p := &trustedPin{r: r, out: r.Out(), agent: servicetest.NewAgent(t, ""), a: a}
	p.base = p.agent.URL()
	p.agent.Set(a.Sign(t, signedCard(p.base, "Reads invoices.")))
	must(t, r.Emit.Submitted(context.Background(), events.Submitted{TaskID: "victim", AgentURL: p.base, SkillID: "summarize",
		Requires: events.Requires{Streaming: true}}))
	p.out.WaitFor(t, "victim pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, "victim")) == 1 })
	return p
}

// stream serves card and sends victim's streaming request, and returns the
// card.drift it causes and its rule ids.
func (p *trustedPin) stream(t *testing.T, card string) (events.Drift, []string) {
	t.Helper()
	p.agent.Set(card)
	must(t, p.r.Emit.Request(context.Background(), events.Request{TaskID: "victim", AgentURL: p.base, Method: "message/stream", Attempt: 1}))
	p.out.WaitFor(t, "victim: card.drift", func(c *servicetest.Collector) bool { return len(c.Drifts("victim")) == 1 })
	d := p.out.Drifts("victim")[0]
	var rules []string
	for _, f := range d.Findings {
		rules = append(rules, f.Rule)
	}
	return d, rules
}
