package census

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Source is what a census reads: what the Tally follows, and the card
// bodies. Both are required.
type Source struct {
	Tally *Tally
	Cards store.Cards
}

// Options adjust a census. Window is the workers' --consistency-window.
type Options struct {
	Window time.Duration
	Now    func() time.Time
}

// Fleet is a census. Its JSON is carddrift fleet --json's, exactly.
type Fleet struct {
	Agents []Agent                `json:"agents"`
	Skills []detector.SharedSkill `json:"skills"`

	Taken    time.Time     `json:"-"`
	Window   time.Duration `json:"-"`
	Problems []string      `json:"-"` // what could not be read, for people
}

// Agent is one agent. Digest, Version and ProtocolVersions describe its
// live card ("" and none when carddrift never fetched it); Tasks counts its
// pins per card version; SplitBrain is set while its replicas disagree;
// UnreachableSince while its last fetch failed.
type Agent struct {
	AgentURL         string        `json:"agentUrl"`
	Digest           string        `json:"digest"`
	Version          string        `json:"version"`
	ProtocolVersions []string      `json:"protocolVersions"`
	Tasks            []CardTasks   `json:"tasks"`
	SplitBrain       *SplitBrain   `json:"splitBrain"`
	UnreachableSince *time.Time    `json:"unreachableSince"`
	Extended         *Extended     `json:"extended,omitempty"` // nil unless carddrift tried to fetch one
	CardURL          string        `json:"-"`
	Name             string        `json:"-"`
	LastChange       time.Time     `json:"-"` // when a fetch first saw the live digest
	LastFetch        time.Time     `json:"-"`
	Unreachable      string        `json:"-"` // the reason of the failing fetch
	Skills           []string      `json:"-"`
	Lease            time.Duration `json:"-"`
}

// Pins returns how many tasks are pinned on the agent.
func (a Agent) Pins() int { return sum(a.Tasks, func(t CardTasks) int { return t.Count }) }

func sum[T any](s []T, n func(T) int) int {
	total := 0
	for _, v := range s {
		total += n(v)
	}
	return total
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CardTasks counts the tasks pinned on one card version (Digest "": the
// first fetch failed); the live card first, then by count. Extended is the
// pins' task.Pin.Extended ("pinned": Digest and Live are the extended card's).
type CardTasks struct {
	Digest   string `json:"digest"`
	Version  string `json:"version"`
	Count    int    `json:"count"`
	Live     bool   `json:"live"`
	Extended string `json:"extended,omitempty"`
}

// Extended is an agent's authenticated extended card as its lease says
// (Digest "" when never fetched; UnreachableSince while it fails).
type Extended struct {
	Digest           string     `json:"digest"`
	Version          string     `json:"version"`
	UnreachableSince *time.Time `json:"unreachableSince,omitempty"`
	Unreachable      string     `json:"-"`
	LastFetch        time.Time  `json:"-"`
}

// ExtendedTasks counts the agent's tasks on the extended card, by state.
func (a Agent) ExtendedTasks() (pinned, unavailable int) {
	for _, t := range a.Tasks {
		switch t.Extended {
		case events.ExtendedPinned:
			pinned += t.Count
		case events.ExtendedUnavailable:
			unavailable += t.Count
		}
	}
	return pinned, unavailable
}

// SplitBrain is since when an agent's replicas disagree and what they
// served within the window.
type SplitBrain struct {
	Since   time.Time           `json:"since"`
	Digests []detector.Sighting `json:"digests"`
}

// InconsistentSkills counts the shared skills whose contracts differ.
func (f *Fleet) InconsistentSkills() int {
	return sum(f.Skills, func(s detector.SharedSkill) int { return b2i(!s.Consistent) })
}

// SplitBrains counts the agents whose replicas disagree.
func (f *Fleet) SplitBrains() int {
	return sum(f.Agents, func(a Agent) int { return b2i(a.SplitBrain != nil) })
}

// Take takes a census. Errors are the stores' and the stream's; records
// that do not decode and bodies carddrift lacks are listed in Problems.
func Take(ctx context.Context, src Source, opts Options) (*Fleet, error) {
	if src.Tally == nil || src.Cards == nil {
		return nil, errors.New("census: a Source needs a Tally and Cards")
	}
	opts.Window = defaults.Positive(opts.Window, fetcher.DefaultConsistencyWindow)
	opts.Now = defaults.Clock(opts.Now)
	if err := src.Tally.Refresh(ctx); err != nil {
		return nil, err
	}
	now := opts.Now()
	f := &Fleet{Taken: now, Window: opts.Window, Agents: []Agent{}}
	byHost := map[string]*Agent{}
	agent := func(rawURL string) *Agent {
		host, err := events.AgentHost(rawURL)
		if err != nil {
			return nil
		}
		a := byHost[host]
		if a == nil {
			a = &Agent{AgentURL: agentOf(rawURL), ProtocolVersions: []string{}, Tasks: []CardTasks{}}
			byHost[host] = a
		}
		return a
	}
	problem := func(err error) {
		if err != nil {
			f.Problems = append(f.Problems, err.Error())
		}
	}

	for _, o := range src.Tally.lastObserved() { // first: the fresher leases override it
		if fetcher.IsExtendedKey(o.CardURL) {
			continue // an extended card's: its lease says more
		}
		if a := agent(o.CardURL); a != nil {
			a.CardURL, a.Digest, a.LastFetch = o.CardURL, o.Digest, o.FetchedAt
		}
	}
	// An agent may have several card URLs: its state is the lease that saw
	// it last, its card the lease that fetched it last.
	type leases struct{ current, fetched *store.Lease }
	byAgent := map[*Agent]*leases{}
	extByAgent := map[*Agent]*leases{} // the extended card's leases
	last := func(l *store.Lease) time.Time {
		if l.FailedAt.After(l.FetchedAt) {
			return l.FailedAt
		}
		return l.FetchedAt
	}
	problem(src.Tally.scanLeases(func(l store.Lease) {
		if l.Digest == "" && l.FailReason == "" {
			return // a claim, never fetched
		}
		a := agent(l.CardURL)
		if a == nil {
			return
		}
		of := byAgent
		if fetcher.IsExtendedKey(l.CardURL) {
			of = extByAgent
		}
		ls := of[a]
		if ls == nil {
			ls = &leases{}
			of[a] = ls
		}
		if ls.current == nil || last(&l).After(last(ls.current)) {
			ls.current = &l
		}
		if l.Digest != "" && (ls.fetched == nil || l.FetchedAt.After(ls.fetched.FetchedAt)) {
			ls.fetched = &l
		}
	}))
	for a, ls := range byAgent {
		if l := ls.fetched; l != nil {
			a.CardURL, a.Digest, a.LastFetch, a.LastChange, a.Lease = l.CardURL, l.Digest, l.FetchedAt, l.ChangedAt, l.MaxAge
			if l.Replicas.Disagree(now, opts.Window) {
				a.SplitBrain = &SplitBrain{Since: l.Replicas.Since, Digests: l.Replicas.Window(now, opts.Window)}
			}
		}
		if l := ls.current; l.FailReason != "" {
			a.UnreachableSince, a.Unreachable = failingSince(l), l.FailReason
			if a.CardURL == "" {
				a.CardURL = l.CardURL
			}
		}
	}

	for a, ls := range extByAgent {
		e := &Extended{}
		if l := ls.fetched; l != nil {
			e.Digest, e.LastFetch = l.Digest, l.FetchedAt
		}
		if l := ls.current; l.FailReason != "" {
			e.UnreachableSince, e.Unreachable = failingSince(l), l.FailReason
		}
		a.Extended = e
	}

	pins := map[groupKey]int{}
	problem(src.Tally.each(func(k groupKey, agentURL string, n int) {
		if agent(agentURL) != nil {
			pins[k] += n
		}
	}))

	cards := map[string]*detector.Card{}
	sizes := map[string]int{} // of the bodies read and parsed
	card := func(digest string) *detector.Card {
		if digest == "" {
			return nil
		}
		if c, ok := cards[digest]; ok {
			return c
		}
		if c, size, ok := src.Tally.parsedCard(digest); ok {
			cards[digest], sizes[digest] = c, size
			return c
		}
		raw, err := src.Cards.Get(ctx, digest)
		var c *detector.Card
		if err == nil {
			if c, err = detector.Parse(raw); err == nil {
				sizes[digest] = len(raw)
			}
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			problem(fmt.Errorf("card %s: %w", digest, err))
		}
		cards[digest] = c
		return c
	}
	for k, n := range pins {
		a := byHost[k.host]
		live := a.Digest
		if k.extended == events.ExtendedPinned {
			live = ""
			if a.Extended != nil {
				live = a.Extended.Digest
			}
		}
		ct := CardTasks{Digest: k.digest, Count: n, Live: k.digest != "" && k.digest == live, Extended: k.extended}
		ct.Version = pinnedVersion(src.Tally, k.digest, card)
		a.Tasks = append(a.Tasks, ct)
	}
	liveCards := map[string]*detector.Card{}
	live := map[string]int{} // digest → body size, of the live cards parsed
	for _, a := range byHost {
		slices.SortFunc(a.Tasks, func(x, y CardTasks) int {
			return cmp.Or(b2i(y.Live)-b2i(x.Live), cmp.Compare(y.Count, x.Count), cmp.Compare(x.Digest, y.Digest), cmp.Compare(x.Extended, y.Extended))
		})
		if a.Extended != nil {
			a.Extended.Version = cardVersion(card(a.Extended.Digest))
		}
		if c := card(a.Digest); c != nil {
			a.Version, a.Name = strings.Clone(c.Version), strings.Clone(c.Name)
			if vs := c.ProtocolVersions(); len(vs) > 0 {
				a.ProtocolVersions = make([]string, len(vs))
				for i, v := range vs {
					a.ProtocolVersions[i] = strings.Clone(v)
				}
			}
			for _, s := range c.Skills {
				a.Skills = append(a.Skills, strings.Clone(s.ID))
			}
			liveCards[a.AgentURL] = c
			live[a.Digest] = sizes[a.Digest]
		}
		f.Agents = append(f.Agents, *a)
	}
	src.Tally.keepParsed(cards, live)
	slices.SortFunc(f.Agents, func(x, y Agent) int { return cmp.Compare(x.AgentURL, y.AgentURL) })
	f.Skills = detector.CompareSkills(liveCards)
	if f.Skills == nil {
		f.Skills = []detector.SharedSkill{}
	}
	return f, nil
}

func pinnedVersion(t *Tally, digest string, card func(string) *detector.Card) string {
	if v, ok := t.version(digest); ok {
		return v
	}
	c := card(digest)
	if digest != "" {
		t.setVersion(digest, cardVersion(c), c != nil)
	}
	return cardVersion(c)
}

func cardVersion(c *detector.Card) string {
	if c == nil {
		return ""
	}
	return strings.Clone(c.Version) // not a slice of the whole body
}

func failingSince(l *store.Lease) *time.Time {
	since := l.FailingSince
	if since.IsZero() {
		since = l.FailedAt
	}
	return &since
}

func agentOf(raw string) string {
	host, err := events.AgentHost(raw)
	if err != nil {
		return raw
	}
	scheme := "https"
	if len(raw) >= 7 && (raw[:7] == "http://" || raw[:7] == "HTTP://") {
		scheme = "http"
	}
	return scheme + "://" + host
}
