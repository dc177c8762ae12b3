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
// at least a lease that must produce a card.drift; Detected those that got
// one with the expected action, Missed the others, Late the detected whose
// card.drift came over LateAfter after its trigger. Exercised: the scenario
// did what it exists to show (drift injected; agent-down seen unreachable;
// split-brain a card.inconsistent).
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

// LateAfter is how long after its trigger a card.drift may come before it
// counts late.
const LateAfter = time.Second

// Scorecard is the demo's closing report. PinRaced counts the first-fetch
// tasks left out because the card changed between the client's discovery
// and carddrift's first fetch. Problems lists every miss and false alarm.
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
// agents whose replicas served two cards for SplitVisible leases, with
// traffic, and answered carddrift's fetches from both; False the agents
// that got one although nothing they served alternated.
type SplitBrainScore struct {
	Injected int `json:"injected"`
	Detected int `json:"detected"`
	Missed   int `json:"missed"`
	False    int `json:"false"`
}

// SplitVisible is how many leases replicas must disagree for the scorecard
// to expect card.inconsistent: A→B→A→B takes four fetches.
const SplitVisible = 4

// Problem is one "missed", "false-abort", "missed-split-brain" or
// "false-split-brain" (naming the Agent). Pinned and Live are card labels;
// Got the actions of the task's card.drift events; PinnedCard and
// Observation the cards the verdict compared (else the agent's last
// card.observed), so that a problem can be diagnosed from the scorecard.
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

// CardSeen is one card as carddrift used it, and when it was fetched or
// pinned.
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
	// Lease is carddrift's lease for an agent: a change is visible a lease
	// after it happened.
	Lease func(*Agent) time.Duration
	// Applied is Player.Applied: when each step really took effect.
	Applied []Applied
	// FullFetch is carddrift's periodic unconditional fetch interval, when a
	// change behind a version ETag becomes visible.
	FullFetch time.Duration
	// Lag is how long after a transition the card must still be the same
	// for it to count as an exposure (default: the run's p99 verdict
	// latency, at least 1s).
	Lag time.Duration
	// Window is carddrift's consistency window (default 2m).
	Window time.Duration
}

// Score judges every task's card.drift events against its scenario's table.
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
		// disagreed (a backlogged worker fetches after the split).
		if as.Agent != nil && as.Agent.Rotated() < SplitVisible {
			continue
		}
		// Replicas of one version behind a version ETag answer each other's
		// If-None-Match with 304: only a full fetch tells them apart.
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

// exposure returns the expectation of the task's first capability-dependent
// transition that met a changed card live for at least a lease, when that
// expectation is a card.drift.
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
		// A change that keeps the version answers 304 behind a version
		// ETag: a worker sees it at its next full fetch, or at once on
		// evidence of drift (an undeclared artifact type).
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

// unknownPinVerdict reports a card.drift on a pin by a client digest of a
// card carddrift never saw (pinned-card-unknown), judged as task.Decide
// does, whatever the scenario's table says.
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

// fetchesPerLease is the mean (over agents with tasks) and the maximum of an
// agent's requests per lease elapsed.
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

// actualSchedule returns, by agent URL, the assignments with their steps at
// when the player applied them.
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

// sameVersion reports whether two cards carry the same version.
func sameVersion(as *Assignment, a, b string) bool {
	ca, err1 := detector.Parse(as.Card(a))
	cb, err2 := detector.Parse(as.Card(b))
	return err1 == nil && err2 == nil && ca.Version == cb.Version
}
