package fleet

import (
	"sync"

	"github.com/carddrift/carddrift/detector"
)

// plan is what the traffic reads of one assignment, computed once instead
// of at every event: each card parsed (the cards of an assignment never
// change), its streaming method, and the labels the agent serves, kept
// until the agent serves something else (TestPlanIsTheTraffic).
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

// card returns the parsed card of a label.
func (p *plan) card(label string) (*detector.Card, error) {
	if pc, ok := p.cards[label]; ok {
		return pc.c, pc.err
	}
	return detector.Parse(p.as.Card(label))
}

// streamMethod is the streaming method name of the card's generation.
func (p *plan) streamMethod(label string) string {
	if m, ok := p.method[label]; ok {
		return m
	}
	return streamMethodOf(p.card(label))
}

// artifactType is the media type the agent produces for skill now: the first
// output mode of the skill in the card it serves (so an agent whose output
// modes changed without a version bump produces the new type), made concrete.
func (p *plan) artifactType(planned, skill string) string {
	label := planned
	if live := p.liveLabels(); len(live) == 1 {
		label = live[0]
	}
	for _, l := range []string{label, planned} {
		c, err := p.card(l)
		if err != nil {
			continue
		}
		s, ok := c.Skill(skill)
		if !ok {
			continue
		}
		if modes := c.OutputModes(s); len(modes) > 0 {
			return concrete(detector.NormalizeMediaType(modes[0]))
		}
	}
	return "text/plain"
}

// declares reports whether the card labelled label declares mediaType among
// the skill's output modes (the pinned card, for the artifact check).
func (p *plan) declares(label, skill, mediaType string) bool {
	c, err := p.card(label)
	if err != nil {
		return true
	}
	s, ok := c.Skill(skill)
	if !ok {
		return len(c.DefaultOutputModes) == 0 || detector.Covers(c.DefaultOutputModes, mediaType)
	}
	modes := c.OutputModes(s)
	return len(modes) == 0 || detector.Covers(modes, mediaType)
}

// liveLabels returns the labels of the cards the agent serves right now, as
// a client discovering it would see them (none while it is down),
// recomputed only when the agent's serving generation moved. The slice is
// shared: read it only.
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
