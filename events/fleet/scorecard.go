package fleet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
)

// Received is one card.* event as a planner received it.
type Received struct {
	Event events.Event
	At    time.Time
}

// ScenarioScore is the scorecard of one scenario. Injected counts tasks
// that met, at a capability-dependent transition, a changed card live for
// at least a lease that their scenario says must produce a card.drift;
// Detected those that got one with the expected action, Missed the others;
// Late the detected whose card.drift came more than LateAfter after its
// trigger. FalseAborts counts tasks aborted although their scenario's table
// says otherwise; Inconsistent the card.inconsistent events of its agents.
// Exercised is true when the scenario did what it exists to show: drift
// injected (for agent-down, the agent seen unreachable; for split-brain,
// card.inconsistent).
type ScenarioScore struct {
	Agents       int  `json:"agents"`
	Tasks        int  `json:"tasks"`
	Injected     int  `json:"injected"`
	Detected     int  `json:"detected"`
	Late         int  `json:"late"`
	Missed       int  `json:"missed"`
	FalseAborts  int  `json:"falseAborts"`
	Drifts       int  `json:"drifts"`
	Unreachable  int  `json:"unreachable"`
	Inconsistent int  `json:"inconsistent"`
	Exercised    bool `json:"exercised"`
}

// Latency is a pair of percentiles and the maximum, in milliseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// LateAfter is how long after its triggering lifecycle event a detected
// drift's card.drift may come before the scorecard counts it late.
const LateAfter = time.Second

// Scorecard is the demo's closing report. PinRaced counts first-fetch tasks
// whose pin (carddrift's first fetch) is not the card the client planned
// against, because the card changed in between: nobody can judge them, so
// they are left out. Problems lists every missed drift and false abort,
// every missed and false split brain, for forensics.
type Scorecard struct {
	Seed                    int64                     `json:"seed"`
	Agents                  int                       `json:"agents"`
	DurationSeconds         float64                   `json:"durationSeconds"`
	Tasks                   int                       `json:"tasks"`
	Events                  int64                     `json:"events"`
	PublishErrors           int64                     `json:"publishErrors"`
	Scenarios               map[string]*ScenarioScore `json:"scenarios"`
	Injected                int                       `json:"injected"`
	Detected                int                       `json:"detected"`
	Late                    int                       `json:"late"`
	Missed                  int                       `json:"missed"`
	FalseAborts             int                       `json:"falseAborts"`
	UnreachableAsDrift      int                       `json:"unreachableAsDrift"`
	FetchesPerAgentPerLease float64                   `json:"fetchesPerAgentPerLease"`
	MaxFetchesPerLease      float64                   `json:"maxFetchesPerAgentPerLease"`
	LatencyMs               Latency                   `json:"latencyMs"`
	EventsPerSecond         float64                   `json:"eventsPerSecond"`
	Verdicts                map[string]int            `json:"verdicts"`
	PinRaced                int                       `json:"pinRaced"`
	SplitBrain              SplitBrainScore           `json:"splitBrain"`
	Problems                []Problem                 `json:"problems,omitempty"`
}

// SplitBrainScore judges card.inconsistent. Injected counts the split-brain
// agents whose replicas served two cards at once for SplitVisible leases,
// with traffic, and answered carddrift's fetches from both (SplitVisible
// answers from the rotation, Agent.Rotated); Detected those that got a
// card.inconsistent, Missed the others. False counts the agents that got
// one although nothing they served alternated (Assignment.Alternates).
type SplitBrainScore struct {
	Injected int `json:"injected"`
	Detected int `json:"detected"`
	Missed   int `json:"missed"`
	False    int `json:"false"`
}

// SplitVisible is how many leases replicas must disagree, with traffic,
// for the scorecard to expect card.inconsistent: the second return of
// A→B→A→B takes four fetches, one per lease at most.
const SplitVisible = 4

// Problem is one missed drift ("missed"), false abort ("false-abort"),
// missed or false split brain ("missed-split-brain", "false-split-brain",
// naming the Agent). Pinned and Live are the labels of the cards; Got the
// actions of the task's card.drift events. PinnedCard and Observation are
// the cards the verdict compared (for a miss, those of the task's last
// card.drift, else the agent's last card.observed), so that a problem can
// be diagnosed from the scorecard alone: an observation fetched before the
// pin is a stale lease.
type Problem struct {
	Kind        string    `json:"kind"`
	Task        string    `json:"task"`
	Agent       string    `json:"agent,omitempty"`
	Scenario    string    `json:"scenario"`
	Profile     string    `json:"profile"`
	Pinned      string    `json:"pinned"`
	Live        string    `json:"live"`
	Expected    string    `json:"expected"`
	Got         []string  `json:"got"`
	Rules       []string  `json:"rules,omitempty"`
	PinnedCard  *CardSeen `json:"pinnedCard,omitempty"`
	Observation *CardSeen `json:"observation,omitempty"`
}

// CardSeen is one card as carddrift used it: its digest, the scenario's
// label for it, and when carddrift fetched (or the task pinned) it.
type CardSeen struct {
	Digest string    `json:"digest"`
	Label  string    `json:"label"`
	At     time.Time `json:"at,omitzero"`
}

func (as *Assignment) seen(digest string, at time.Time) *CardSeen {
	return &CardSeen{Digest: digest, Label: as.LabelOf(digest), At: at}
}

// ScoreInput is what Score judges.
type ScoreInput struct {
	Seed     int64
	Schedule []Assignment
	Start    time.Time
	Duration time.Duration
	Tasks    map[string]*Task
	Sent     int64
	Errors   int64
	Received []Received
	// Lease returns the lease carddrift runs for an agent: a change counts
	// as visible a lease after it happened.
	Lease func(*Agent) time.Duration
	// Applied is Player.Applied: exposures are judged against when each step
	// really took effect, so that a late step on a loaded machine is not a
	// miss.
	Applied []Applied
	// FullFetch is carddrift's periodic unconditional fetch interval: behind
	// an ETag derived from the version, a change that keeps the version is
	// visible only after it.
	FullFetch time.Duration
	// Lag is how long after a transition was sent the card must still be
	// the same for it to count as an exposure: the time a worker may take
	// to handle it (default: the run's p99 verdict latency, at least 1s; a
	// change undone before carddrift fetched is not one it could see).
	Lag time.Duration
	// Window is carddrift's consistency window (default 2m): what split
	// brain is judged over.
	Window time.Duration
}

// Score computes the scorecard: every task's expected verdict from its
// scenario's table, judged against the card.drift events carddrift published.
func Score(in ScoreInput) Scorecard {
	sc := Scorecard{
		Seed: in.Seed, Agents: len(in.Schedule), DurationSeconds: in.Duration.Seconds(),
		Tasks: len(in.Tasks), Events: in.Sent, PublishErrors: in.Errors,
		Scenarios: map[string]*ScenarioScore{}, Verdicts: map[string]int{},
	}
	byURL := map[string]*Assignment{}
	for i := range in.Schedule {
		as := &in.Schedule[i]
		byURL[as.AgentURL] = as
		if sc.Scenarios[as.Scenario] == nil {
			sc.Scenarios[as.Scenario] = &ScenarioScore{}
		}
		sc.Scenarios[as.Scenario].Agents++
	}
	sentAt := map[string]time.Time{}
	for _, t := range in.Tasks {
		for _, e := range t.Events {
			sentAt[e.ID] = e.At
		}
	}
	inconsistent := map[string]int{}             // agent → card.inconsistent events
	observed := map[string]events.Observed{}     // agent → its last card.observed
	pins := map[string]Received{}                // task → its last card.pinned
	drifts := map[string][]events.Drift{}        // task → its card.drift events
	driftLatency := map[string][]time.Duration{} // task → the latency of each (-1: unknown)
	var latencies []float64
	for _, r := range in.Received {
		switch d := r.Event.Data.(type) {
		case events.Pinned:
			pins[d.TaskID] = r
		case events.Observed:
			observed[d.AgentURL] = d
		case events.Drift:
			drifts[d.TaskID] = append(drifts[d.TaskID], d)
			sc.Verdicts[string(d.Verdict.Action)]++
			lat := time.Duration(-1)
			if at, ok := sentAt[d.Trigger.EventID]; ok {
				lat = r.At.Sub(at)
				latencies = append(latencies, float64(lat.Microseconds())/1000)
			}
			driftLatency[d.TaskID] = append(driftLatency[d.TaskID], lat)
		case events.Unreachable:
			if as := byURL[d.AgentURL]; as != nil {
				sc.Scenarios[as.Scenario].Unreachable++
			}
		case events.Inconsistent:
			if as := byURL[strings.TrimSuffix(d.AgentURL, "/")]; as != nil {
				sc.Scenarios[as.Scenario].Inconsistent++
				inconsistent[as.AgentURL]++
			}
		}
	}

	actual := actualSchedule(in)
	slices.Sort(latencies)
	if in.Lag <= 0 {
		in.Lag = max(time.Second, time.Duration(percentile(latencies, 0.99)*float64(time.Millisecond)))
	}
	for _, t := range in.Tasks {
		as := byURL[t.AgentURL]
		if as == nil {
			continue
		}
		s := sc.Scenarios[as.Scenario]
		s.Tasks++
		ds := drifts[t.ID]
		s.Drifts += len(ds)
		pin, _ := pins[t.ID].Event.Data.(events.Pinned)
		if t.PinSource == events.PinFirstFetch && pin.Digest != "" && as.LabelOf(pin.Digest) != t.PlannedLabel {
			sc.PinRaced++
			continue
		}
		for _, d := range ds {
			if as.Scenario == AgentDown {
				sc.UnreachableAsDrift++
			}
			if d.Verdict.Action != detector.Abort {
				continue
			}
			if e, ok := as.ExpectDigests(t.Profile.Name, d.Pinned.Digest, d.Live.Digest); (!ok || e.Outcome != OutcomeAbort) && !unknownPinVerdict(as, t, d) {
				s.FalseAborts++
				sc.Problems = append(sc.Problems, Problem{Kind: "false-abort", Task: t.ID, Scenario: as.Scenario, Profile: t.Profile.Name,
					Pinned: as.LabelOf(d.Pinned.Digest), Live: as.LabelOf(d.Live.Digest), Expected: string(e.Outcome), Got: actions(ds), Rules: detector.RuleIDs(d.Findings),
					PinnedCard: as.seen(d.Pinned.Digest, d.Pinned.FetchedAt), Observation: as.seen(d.Live.Digest, d.Live.FetchedAt)})
				break
			}
		}
		want, ok := exposure(actual[as.AgentURL], t, pin.Digest, in)
		if !ok {
			continue
		}
		s.Injected++
		i := slices.IndexFunc(ds, func(d events.Drift) bool {
			return string(d.Verdict.Action) == string(want.Outcome) && hasRules(d, want.Rules) && d.Verdict.ReplanSkill == want.ReplanSkill ||
				unknownPinVerdict(as, t, d)
		})
		if i >= 0 {
			s.Detected++
			if driftLatency[t.ID][i] > LateAfter {
				s.Late++
			}
			continue
		}
		s.Missed++
		p := Problem{Kind: "missed", Task: t.ID, Scenario: as.Scenario, Profile: t.Profile.Name,
			Pinned: want.From, Live: want.To, Expected: string(want.Outcome), Got: actions(ds), Rules: want.Rules}
		if pin.Digest != "" {
			p.PinnedCard = as.seen(pin.Digest, pins[t.ID].At)
		}
		if len(ds) > 0 {
			l := ds[len(ds)-1].Live
			p.Observation = as.seen(l.Digest, l.FetchedAt)
		} else if o, ok := observed[as.AgentURL]; ok {
			p.Observation = as.seen(o.Digest, o.FetchedAt)
		}
		sc.Problems = append(sc.Problems, p)
	}
	sc.SplitBrain = splitBrains(in, actual, inconsistent, &sc.Problems)
	for name, s := range sc.Scenarios {
		s.Exercised = s.Injected > 0 || (name == AgentDown && s.Unreachable > 0) || name == Control ||
			(name == SplitBrain && s.Inconsistent > 0)
		sc.Injected += s.Injected
		sc.Detected += s.Detected
		sc.Late += s.Late
		sc.Missed += s.Missed
		sc.FalseAborts += s.FalseAborts
	}
	sc.LatencyMs = Latency{P50: percentile(latencies, 0.50), P99: percentile(latencies, 0.99), Max: percentile(latencies, 1)}
	if in.Duration > 0 {
		sc.EventsPerSecond = float64(in.Sent) / in.Duration.Seconds()
	}
	sc.FetchesPerAgentPerLease, sc.MaxFetchesPerLease = fetchesPerLease(in)
	return sc
}

// splitBrains judges card.inconsistent per agent (see SplitBrainScore).
func splitBrains(in ScoreInput, actual map[string]*Assignment, got map[string]int, problems *[]Problem) SplitBrainScore {
	var sb SplitBrainScore
	window := in.Window
	if window <= 0 {
		window = 2 * time.Minute
	}
	for i := range in.Schedule {
		as := actual[in.Schedule[i].AgentURL]
		if got[as.AgentURL] > 0 && !as.Alternates(window) {
			sb.False++
			*problems = append(*problems, Problem{Kind: "false-split-brain", Agent: as.AgentURL, Scenario: as.Scenario,
				Expected: "no card.inconsistent: nothing the agent served alternated", Got: []string{fmt.Sprintf("%d card.inconsistent", got[as.AgentURL])}})
		}
		if as.Scenario != SplitBrain {
			continue
		}
		at, length := as.SplitAt()
		if length < 0 {
			length = in.Duration - at
		}
		lease := time.Second
		if in.Lease != nil && as.Agent != nil {
			lease = in.Lease(as.Agent)
		}
		transitions := 0
		for _, t := range in.Tasks {
			if t.AgentURL != as.AgentURL {
				continue
			}
			for _, e := range t.Events {
				if off := e.At.Sub(in.Start); e.Capability && off >= at && off <= at+length {
					transitions++
				}
			}
		}
		if length < SplitVisible*lease || transitions < SplitVisible {
			continue
		}
		// What carddrift could see is what it fetched while the replicas
		// disagreed, not what the traffic sent then: a worker that handles
		// those transitions after the split (a backlog on a loaded machine)
		// fetches one card. Fewer than SplitVisible answers from the
		// rotation are not an alternation it could tell (A→B→A→B).
		if as.Agent != nil && as.Agent.Rotated() < SplitVisible {
			continue
		}
		// Behind an ETag derived from the version, replicas of one version
		// answer each other's If-None-Match with 304: only the periodic
		// full fetch could tell them apart.
		if reps := as.LiveAt(at); as.Agent != nil && as.Agent.Caching() == CacheVersion && len(reps) > 1 && sameVersion(as, reps[0], reps[1]) {
			continue
		}
		sb.Injected++
		if got[as.AgentURL] > 0 {
			sb.Detected++
			continue
		}
		sb.Missed++
		*problems = append(*problems, Problem{Kind: "missed-split-brain", Agent: as.AgentURL, Scenario: as.Scenario,
			Expected: fmt.Sprintf("card.inconsistent: replicas served two cards for %v with %d transitions", length.Round(time.Millisecond), transitions)})
	}
	return sb
}

// exposure returns what the task must get: the expectation of its first
// capability-dependent transition that met a changed card live for at least
// a lease (one label served, not down), when that expectation is a card.drift.
func exposure(as *Assignment, t *Task, pinnedDigest string, in ScoreInput) (Expectation, bool) {
	from := as.LabelOf(pinnedDigest)
	if from == "" {
		return Expectation{}, false
	}
	settle := 250 * time.Millisecond
	hidden := time.Duration(0) // extra delay before a change behind a version ETag shows
	if in.Lease != nil && as.Agent != nil {
		settle += in.Lease(as.Agent)
		if as.Agent.Caching() == CacheVersion {
			hidden = in.FullFetch
		}
	}
	for _, e := range t.Events {
		if !e.Capability {
			continue
		}
		off := e.At.Sub(in.Start)
		to, stable := stableLabel(as, off-settle, off+in.Lag)
		if !stable || to == from {
			continue
		}
		want, ok := as.Expect(t.Profile.Name, from, to)
		if !ok {
			continue
		}
		// Behind an ETag derived from the version alone, a change that keeps
		// the version answers 304: a worker sees it at its next periodic full
		// fetch, or at once through evidence of drift (an undeclared artifact
		// type) that forces an unconditional fetch.
		if hidden > 0 && !e.Evidence && sameVersion(as, from, to) {
			if _, stable := stableLabel(as, off-settle-hidden, off+in.Lag); !stable {
				continue
			}
		}
		if _, isDrift := want.Outcome.Action(); isDrift {
			return want, true
		}
	}
	return Expectation{}, false
}

// stableLabel reports the one card served throughout [from, to], if any.
func stableLabel(as *Assignment, from, to time.Duration) (string, bool) {
	if from < 0 {
		from = 0
	}
	cur := as.LiveAt(to)
	if len(cur) != 1 || cur[0] == LabelDown {
		return "", false
	}
	if !slices.Equal(as.LiveAt(from), cur) {
		return "", false
	}
	for _, s := range as.Steps {
		if s.At > from && s.At <= to && !slices.Equal(as.LiveAt(s.At), cur) {
			return "", false
		}
	}
	return cur[0], true
}

func hasRules(d events.Drift, rules []string) bool {
	ids := detector.RuleIDs(d.Findings)
	for _, r := range rules {
		if !slices.Contains(ids, r) {
			return false
		}
	}
	return true
}

func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return float64(int(sorted[i]*10+0.5)) / 10
}

// unknownPinVerdict reports a card.drift that the contract calls for
// whatever the scenario's table (which knows every card's body) says: the
// task was pinned by a client digest of a card carddrift never saw (no
// fingerprint), so any other live card is drift whose findings cannot be
// listed (pinned-card-unknown), and carddrift judged it as the worker's own
// code does (task.Decide with no pinned body: pinned-card-unknown on the live
// body). Under a backlog a client's digest often names a card that was gone
// before carddrift first looked.
func unknownPinVerdict(as *Assignment, t *Task, d events.Drift) bool {
	if d.Pinned.Fingerprint != "" || !slices.ContainsFunc(d.Findings, func(f detector.Finding) bool { return f.Rule == detector.RulePinnedCardUnknown }) {
		return false
	}
	v, ok := as.Version(as.LabelOf(d.Live.Digest))
	if !ok {
		return false
	}
	live, err := detector.Parse(v.Raw)
	if err != nil {
		return false
	}
	dec := task.Decide(task.Pin{TaskID: t.ID, AgentURL: t.AgentURL, Digest: d.Pinned.Digest, Requirements: t.Profile.Task}, nil,
		task.Observation{Digest: d.Live.Digest, Card: live}, nil, task.Policy{})
	return dec.Verdict.Action == d.Verdict.Action
}

// fetchesPerLease is the mean (over agents that got tasks) and the maximum of
// requests that reached an agent divided by the leases that elapsed.
func fetchesPerLease(in ScoreInput) (mean, worst float64) {
	if in.Lease == nil {
		return 0, 0
	}
	used := map[string]bool{}
	for _, t := range in.Tasks {
		used[t.AgentURL] = true
	}
	var sum float64
	n := 0
	for i := range in.Schedule {
		as := &in.Schedule[i]
		if as.Agent == nil || !used[as.AgentURL] {
			continue
		}
		st := as.Agent.Stats()
		lease := in.Lease(as.Agent)
		leases := max(1, float64(in.Duration)/float64(lease))
		v := float64(st.Full+st.Conditional) / leases
		sum += v
		worst = max(worst, v)
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return float64(int(sum/float64(n)*100+0.5)) / 100, float64(int(worst*100+0.5)) / 100
}

func actions(ds []events.Drift) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, string(d.Verdict.Action))
	}
	return out
}

// actualSchedule returns, by agent URL, the assignments with their steps
// moved to when the player really applied them.
func actualSchedule(in ScoreInput) map[string]*Assignment {
	out := map[string]*Assignment{}
	for i := range in.Schedule {
		as := in.Schedule[i]
		as.Steps = slices.Clone(as.Steps)
		for _, a := range in.Applied {
			if a.Agent == as.AgentID && a.Step < len(as.Steps) && a.Step > 0 {
				as.Steps[a.Step].At = a.At.Sub(in.Start)
			}
		}
		out[as.AgentURL] = &as
	}
	return out
}

// sameVersion reports whether two of an assignment's cards carry the same
// version field.
func sameVersion(as *Assignment, a, b string) bool {
	ca, err1 := detector.Parse(as.Card(a))
	cb, err2 := detector.Parse(as.Card(b))
	return err1 == nil && err2 == nil && ca.Version == cb.Version
}
