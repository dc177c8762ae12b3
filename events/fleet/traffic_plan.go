package fleet

import (
	"sync"

	"github.com/carddrift/carddrift/detector"
)

// plan is what the traffic reads of one assignment, computed once instead
// of at every event: each card parsed (the cards of an assignment never
// change), its streaming method, and the labels the agent serves, kept
// until the agent serves something else. The answers are those of
// streamMethod, artifactType, declares and liveLabels
// (TestPlanIsTheTraffic).
type plan struct {
	as     *Assignment
	cards  map[string]parsedCard // by label
	method map[string]string     // streamMethod by label

	mu     sync.Mutex
	known  bool
	gen    uint64   // the agent's serving generation served was read at
	served []string // servedLabels at gen; shared, never written
}

type parsedCard struct {
	c   *detector.Card
	err error
}

func newPlan(as *Assignment) *plan {
	p := &plan{as: as, cards: make(map[string]parsedCard, len(as.Cards)), method: make(map[string]string, len(as.Cards))}
	for _, c := range as.Cards {
		card, err := detector.Parse(c.Raw)
		p.cards[c.Label] = parsedCard{card, err}
		p.method[c.Label] = streamMethodOf(card, err)
	}
	return p
}

// card is a cardSource over the parsed cards (parsing a label the
// assignment does not have, as parseEach would).
func (p *plan) card(label string) (*detector.Card, error) {
	if pc, ok := p.cards[label]; ok {
		return pc.c, pc.err
	}
	return detector.Parse(p.as.Card(label))
}

func (p *plan) streamMethod(label string) string {
	if m, ok := p.method[label]; ok {
		return m
	}
	return streamMethod(p.as, label)
}

func (p *plan) artifactType(planned, skill string) string {
	return artifactTypeOf(p.liveLabels(), p.card, planned, skill)
}

func (p *plan) declares(label, skill, mediaType string) bool {
	return declaresOf(p.card, label, skill, mediaType)
}

// liveLabels is liveLabels(p.as), the served labels recomputed only when
// the agent's serving generation moved. The slice is shared: read it only.
func (p *plan) liveLabels() []string {
	a := p.as.Agent
	if a == nil {
		return nil
	}
	gen, outage := a.servedGen()
	if outage != Up {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.known || p.gen != gen {
		// Read after gen: at least as new as gen; if it is newer, the
		// next call sees another generation and reads again.
		p.served, p.gen, p.known = servedLabels(p.as), gen, true
	}
	return p.served
}
