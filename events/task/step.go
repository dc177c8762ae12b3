package task

import (
	"fmt"
	"slices"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// Outcomes of one event, the "outcome" label of carddrift_events_total.
const (
	OutcomeNoFetch     = "no-fetch"    // needed no live card
	OutcomeNoPin       = "no-pin"      // the task has no pin
	OutcomeUnchanged   = "unchanged"   // live card matches the pin, no task finding
	OutcomeDrift       = "drift"       // card.drift published (or already published)
	OutcomeUnreachable = "unreachable" // card.unreachable published
	OutcomePinned      = "pinned"      // the task was pinned
	OutcomeStale       = "stale"       // a submission older than the task's current pin
)

// Meta says where and when an event was delivered.
type Meta struct {
	// Seq is the event's position in the lifecycle stream (0: unknown).
	Seq uint64
	// Time is the event's own time (its CloudEvents time), else when the
	// shell received it.
	Time time.Time
	// Now is the shell's clock when it handles the event.
	Now time.Time
	// Policy is how the shell judges every task (carddrift serve:
	// RequireSigned from --require-signed-cards, the registry's rules).
	Policy
}

// Policy is how a shell judges every task, beside the task's own
// requirements. The zero value judges as carddrift serve does with its
// defaults: the task's posture, the registry's rules, signatures not
// required.
type Policy struct {
	// RequireSigned is the posture for signed fleets (carddrift serve
	// --require-signed-cards): detector.CheckSigned at every transition.
	RequireSigned bool
	// Posture, if set, replaces every task's own (Requirements.Posture):
	// carddrift replay --reevaluate --posture, the planner's WithPosture.
	Posture detector.Posture
	// Rules is the rule set the findings are judged with (nil: the
	// registry as it is, what carddrift serve runs).
	Rules *detector.RuleSet
	// Diffs, if set, remembers the diff of each pair of pinned and live
	// digests; it never changes a decision.
	Diffs *detector.DiffMemo
}

// Observation is the core's name for a live card observation
// (detector.Observation; events/internal/observation.Of makes it).
type Observation = detector.Observation

// liveCard returns the observed card with its verified signatures (Card is
// shared and never changed).
func liveCard(o Observation) *detector.Card {
	if len(o.Signatures) == 0 || o.Card == nil {
		return o.Card
	}
	c := *o.Card
	c.Signatures = o.Signatures
	return &c
}

// Failure is a fetch that failed: Reason is one of the fetcher's reasons.
type Failure struct {
	CardURL string
	Reason  string
	Detail  string
}

// Result is what the shell must do for an event, in order: store the card
// body (StoreCard), then — for a submission — write the pin, then publish,
// then — for a transition — write the pin. Pin nil means nothing to write.
type Result struct {
	StoreCard *CardBody
	Pin       *Pin
	// PinFirst is set for submissions: the pin is written (created or
	// replaced) before the events are published; otherwise it is updated
	// (compare-and-set) after them.
	PinFirst bool
	Publish  []events.Data
	Outcome  string
}

// CardBody is a card body carddrift keeps by digest.
type CardBody struct {
	Digest string
	Raw    []byte
	Card   *detector.Card
}

// NeedsCard reports whether handling ev may need the task's pin, a live card
// or a publish: false for the lifecycle steps that need no live card
// (terminal states, working, first attempts of plain send/get/cancel,
// errors outside the schema class), which the shell acknowledges at once.
func NeedsCard(ev events.Event) bool {
	switch ev.Data.(type) {
	case events.Request, events.Status, events.Error:
		return mayDepend(ev.Data)
	}
	return true
}

func trigger(ev events.Event) events.Trigger {
	return events.Trigger{EventID: ev.ID, Type: ev.Type, Source: ev.Source}
}

// Transition is the core's judgement of one capability-dependent transition
// of a task that has a pin. Begin makes it; the shell then observes the live
// card (Force says whether unconditionally), asks Recheck whether that
// observation can judge the pin, and ends with Judge or Fail.
type Transition struct {
	ev     events.Event
	meta   Meta
	pin    Pin
	pinned *detector.Card // nil when carddrift never stored the pinned body
	dirty  bool

	// Findings are the task-level findings the event itself shows
	// (unmodeled-skill, artifact-type-undeclared; blind-retry is added by
	// Judge, which needs the live digest).
	Findings []detector.Finding
	// Force asks for an unconditional fetch: the event is evidence of drift.
	Force bool
	// ForceReason says why (logs and tests).
	ForceReason string

	retry       bool
	errorBefore bool
	method      string
	attempt     int
	rechecked   bool
	extended    string // the observation's extended-card state (UseExtended)
}

// Begin starts the judgement of ev for the task whose state is pin and
// whose pinned card body is pinned (nil when unknown). It records in the pin
// what the event says about the task (schema-class errors and retries, with
// their stream positions) and derives the task-level findings. It returns
// nil when ev needs no live card.
func Begin(ev events.Event, m Meta, pin Pin, pinned *detector.Card) *Transition {
	if !mayDepend(ev.Data) {
		return nil // most lifecycle events: nothing to copy
	}
	t := &Transition{ev: ev, meta: m, pin: pin.Clone(), pinned: pinned}
	seq := m.Seq
	switch d := ev.Data.(type) {
	case events.Request:
		if d.Attempt > 1 {
			t.retry = true
			t.method, t.attempt = d.Method, d.Attempt
			// Blind only if the schema-class error precedes this retry in
			// the stream (a redelivery may have brought it here later).
			t.errorBefore = !t.pin.SchemaErrorAt.IsZero() &&
				(seq == 0 || t.pin.SchemaErrorSeq == 0 || t.pin.SchemaErrorSeq < seq)
			if t.errorBefore {
				t.setForce("a retry after a schema-class error")
			}
			if seq == 0 || seq > t.pin.RetrySeq {
				t.pin.RetrySeq, t.pin.RetryMethod, t.pin.RetryAttempt = seq, d.Method, d.Attempt
				t.dirty = true
			}
		}
	case events.Status:
		if st, _ := detector.NormalizeState(d.State); st == detector.StateInputRequired && pinned != nil {
			if f, ok := detector.CheckInputRequest(pinned, d.SkillID); ok {
				t.Findings = append(t.Findings, f)
				t.setForce("an input request for a skill the pin does not declare")
			}
		}
	case events.Artifact:
		if pinned != nil {
			if fs := detector.CheckArtifact(pinned, t.pin.Requirements.SkillID, d.ArtifactID, d.MediaTypes); len(fs) > 0 {
				t.Findings = append(t.Findings, fs...)
				t.setForce("an artifact type the pin does not declare")
			}
		}
	case events.Error:
		if seq == 0 || seq > t.pin.SchemaErrorSeq {
			t.pin.SchemaErrorAt = m.Time.UTC()
			t.pin.SchemaErrorCode = d.Code
			t.pin.SchemaErrorSeq = seq
			t.dirty = true
		}
		// A retry that follows this error in the stream was handled before
		// it (out of order): judge that retry now.
		if seq != 0 && t.pin.RetrySeq > seq {
			t.retry, t.errorBefore = true, true
			t.method, t.attempt = t.pin.RetryMethod, t.pin.RetryAttempt
		}
		t.setForce("a schema-class error")
	}
	return t
}

// mayDepend reports whether a lifecycle event's data is a transition that
// may depend on the agent's card (Begin's nil otherwise): a capability
// method or a retry, a capability state, an artifact, a schema-class error.
func mayDepend(data any) bool {
	switch d := data.(type) {
	case events.Request:
		return d.Attempt > 1 || detector.IsCapabilityMethod(d.Method)
	case events.Status:
		return detector.IsCapabilityState(d.State)
	case events.Artifact:
		return true
	case events.Error:
		return detector.IsSchemaClassError(d.Code)
	}
	return false
}

// setForce asks for an unconditional fetch, saying why.
func (t *Transition) setForce(reason string) { t.Force, t.ForceReason = true, reason }

// Recheck reports whether the observation cannot judge the pin and an
// unconditional fetch must be made first: the live digest differs from the
// pin, and the observation's content was last verified by a full fetch
// before the task was pinned — the client may have read a newer card than
// the shared lease holds (a 304 behind a version-derived ETag refreshes a
// lease without looking at the content). It asks once per transition.
func (t *Transition) Recheck(obs Observation) (bool, string) {
	if t.rechecked || t.pin.Pending() || obs.Digest == t.pin.Digest || obs.Digest == t.pin.LiveDigest {
		return false, ""
	}
	if obs.VerifiedAt.Before(t.pin.PinnedAt) && !replaced(obs, t.pin.Digest) {
		t.rechecked = true
		return true, "the observation was verified before the task was pinned"
	}
	return false, ""
}

// replaced reports that carddrift saw the pinned card live and then the
// observed one replace it (the pinned digest last seen no later than the
// observed digest was first seen): the observation is newer than the pinned
// card whenever the client pinned it, so it can judge the pin without
// another fetch. A pinned card carddrift never saw (within the window) is
// not known to be replaced.
func replaced(obs Observation, pinned string) bool {
	var p, l *detector.Sighting
	for i := range obs.Seen {
		switch obs.Seen[i].Digest {
		case pinned:
			p = &obs.Seen[i]
		case obs.Digest:
			l = &obs.Seen[i]
		}
	}
	return p != nil && l != nil && !p.LastSeen.After(l.FirstSeen)
}

// UseExtended says which card the shell observed for a task that uses the
// extended card (events.ExtendedPinned: the extended card;
// events.ExtendedUnavailable: the public card, because none can be asked
// for now — the credentials for the agent's origin were removed, or the
// agent stopped offering one). The shell says it before Judge; a task that
// does not use the extended card ignores it.
func (t *Transition) UseExtended(state string) {
	if t.pin.Requirements.ExtendedCard {
		t.extended = state
	}
}

// Judge evaluates the live observation against the pin: a pending pin is
// completed; otherwise findings and a verdict, and a card.drift unless the
// cards are the same and the task shows nothing, or the same drift was
// already published for this pin. A pin that LostExtended is pinned again
// on the public card observed, and its task-level findings judged on it.
func (t *Transition) Judge(obs Observation) Result {
	if t.pin.LostExtended(t.extended) {
		return t.unavailable(obs)
	}
	if t.pin.Pending() {
		t.pin.observe(obs)
		return Result{Pin: &t.pin, PinFirst: true, Publish: []events.Data{pinned(t.ev, t.pin)}, Outcome: OutcomePinned}
	}
	findings := t.Findings
	if t.retry && t.errorBefore {
		if f, ok := detector.CheckRetry(detector.Retry{
			Method: t.method, Attempt: t.attempt, ErrorAt: t.pin.SchemaErrorAt, ErrorCode: t.pin.SchemaErrorCode,
			PinnedDigest: t.pin.Digest, SkillID: t.pin.Requirements.SkillID,
		}, obs.Digest); ok {
			findings = append(findings, f)
		}
	}
	return evaluate(t.ev, t.meta, &t.pin, t.dirty, t.pinned, obs, findings)
}

// unavailable pins the task on the public card obs, extended "unavailable"
// (Judge, for a pin that LostExtended).
func (t *Transition) unavailable(obs Observation) Result {
	t.pin = t.pin.OnPublicCard(obs)
	r := Result{Pin: &t.pin, Publish: []events.Data{pinned(t.ev, t.pin)}, Outcome: OutcomePinned}
	if len(t.Findings) > 0 {
		r.add(evaluate(t.ev, t.meta, &t.pin, true, obs.Card, obs, t.Findings))
	}
	return r
}

// add publishes what judged publishes too, and takes its drift outcome.
func (r *Result) add(judged Result) {
	r.Publish = append(r.Publish, judged.Publish...)
	if judged.Outcome == OutcomeDrift {
		r.Outcome = OutcomeDrift
	}
}

// Fail reports a failed fetch: card.unreachable, and the pin as recorded.
func (t *Transition) Fail(f Failure) Result {
	r := Result{Publish: []events.Data{unreachable(t.ev, t.meta, t.pin.AgentURL, t.pin.TaskID, f)}, Outcome: OutcomeUnreachable}
	if t.dirty {
		r.Pin = &t.pin
	}
	return r
}

// evaluate judges pin against obs with the task-level findings, as the
// worker and the submission of a client digest do, and makes the card.drift
// (published once per pin, live card and rules).
func evaluate(ev events.Event, m Meta, pin *Pin, dirty bool, pinnedCard *detector.Card, obs Observation, taskFindings []detector.Finding) Result {
	keep := func(outcome string) Result {
		r := Result{Outcome: outcome}
		if dirty {
			r.Pin = pin
		}
		return r
	}
	d := Decide(*pin, pinnedCard, obs, taskFindings, m.Policy)
	if !d.Compared {
		return keep(OutcomeUnchanged)
	}
	if len(d.Findings) == 0 {
		// Another form of the same card (an SDK answering by A2A-Version),
		// or a change no rule sees: nothing to tell a planner.
		if pin.LiveDigest != obs.Digest {
			pin.LiveDigest = obs.Digest
			dirty = true
		}
		return keep(OutcomeUnchanged)
	}
	drift := events.Drift{
		TaskID: pin.TaskID, AgentURL: pin.AgentURL, CardURL: obs.CardURL,
		Pinned: events.CardRef{Digest: pin.Digest, Fingerprint: pin.Fingerprint, ETag: pin.ETag, FetchedAt: pin.PinnedAt,
			Signer: pin.Signer()},
		Live: events.CardRef{Digest: obs.Digest, Fingerprint: obs.Fingerprint, ETag: obs.ETag, FetchedAt: obs.FetchedAt.UTC(),
			Signer: signer(obs.Signatures)},
		Findings: d.Findings, Verdict: d.Verdict, Trigger: trigger(ev),
	}
	id := events.MsgID(drift)
	if pin.HasReported(id) {
		return keep(OutcomeDrift)
	}
	pin.AddReported(id)
	pin.LiveDigest = obs.Digest
	return Result{Pin: pin, Publish: []events.Data{drift}, Outcome: OutcomeDrift}
}

// Decision is the task core's verdict on a task: what Decide found.
type Decision struct {
	// Findings are every finding between the pinned and the live card with
	// the task-level ones, after the rule set, sorted as Diff sorts them,
	// each with Touches set for the task. Empty when the cards are the same
	// or no rule tells them apart.
	Findings []detector.Finding
	// Verdict is the task's verdict on Findings (continue, "no drift", when
	// there are none).
	Verdict detector.Verdict
	// Compared is false when the live card is the pinned one and nothing
	// else was to be judged (no task finding, neither card signed): the
	// worker then publishes nothing and does not even diff.
	Compared bool
}

// Drift reports whether the worker would publish a card.drift for this
// decision: the cards were compared and some finding remains.
func (d Decision) Drift() bool { return d.Compared && len(d.Findings) > 0 }

// Decide is the task core's one verdict (see the package doc): the findings
// and verdict of a task whose state is pin (pinned is its stored body, nil
// when carddrift never saw it) against the live observation obs, with the
// task-level findings its own events showed, under the shell's policy p. A
// pin whose body is unknown is judged with pinned-card-unknown; while the
// agent's replicas disagree the findings, if any, carry replicas-disagree;
// p.Rules then drops and re-grades them, and p.Posture, if set, replaces
// the task's own.
func Decide(pin Pin, pinned *detector.Card, obs Observation, taskFindings []detector.Finding, p Policy) Decision {
	req := pin.Requirements
	posture := req.Posture
	if p.Posture != "" {
		posture = p.Posture
	}
	live := liveCard(obs)
	taskFindings = slices.Clip(taskFindings)
	if p.RequireSigned {
		if f, ok := detector.CheckSigned(live); ok {
			taskFindings = append(taskFindings, f)
		}
	}
	if pinned == nil && obs.Digest == pin.Digest {
		pinned = obs.Card // the same content
	}
	pinned = pin.card(pinned)
	against := pinned
	if obs.Digest == pin.Digest && len(taskFindings) == 0 && !signedEither(pinned, live) {
		return Decision{Findings: []detector.Finding{}, Verdict: detector.Judge(nil, pinned, live, req, posture)}
	}
	var findings []detector.Finding
	if pinned != nil {
		// The memo's findings are shared: appending copies them (their
		// capacity is their length), and Rules.Apply below copies again.
		findings = append(p.Diffs.Diff(pin.Digest, obs.Digest, pinned, live), taskFindings...)
	} else {
		findings, _ = detector.EvaluateUnknown(pin.Digest, obs.Digest, live, req, posture, taskFindings...)
		against = live // the only card known
	}
	if len(findings) > 0 {
		// The cause of drift that comes and goes rides along with it; on
		// its own it is the agent's news (card.inconsistent), not the
		// task's.
		if f, ok := detector.CheckReplicas(obs.Disagreeing, obs.Window); ok {
			findings = append(findings, f)
		}
	}
	findings, v := detector.Assess(p.Rules.Apply(findings), against, live, req, posture)
	return Decision{Findings: findings, Verdict: v, Compared: true}
}

// Assess is Decide at a transition that shows nothing of its own, without
// the bookkeeping of what was published (carddrift impact asks it of a
// proposed card): the findings and verdict of the card.drift it would
// publish, and false when it would publish none or the pin is pending.
func Assess(pin Pin, pinned *detector.Card, obs Observation, m Meta) ([]detector.Finding, detector.Verdict, bool) {
	if pin.Pending() {
		return nil, detector.Verdict{}, false
	}
	d := Decide(pin, pinned, obs, nil, m.Policy)
	if !d.Drift() {
		return nil, d.Verdict, false
	}
	return d.Findings, d.Verdict, true
}

// signedEither reports that the pinned or the live card is signed, so that
// two cards with one digest may still differ in who signed them.
func signedEither(pinned, live *detector.Card) bool {
	return pinned != nil && (pinned.HasSignatures || len(pinned.Signatures) > 0) ||
		live != nil && (live.HasSignatures || len(live.Signatures) > 0)
}

func pinned(ev events.Event, p Pin) events.Pinned {
	return events.Pinned{
		TaskID: p.TaskID, AgentURL: p.AgentURL, CardURL: p.CardURL,
		Digest: p.Digest, Fingerprint: p.Fingerprint, Source: p.Source, Trigger: trigger(ev),
		Signer: p.Signer(), Extended: p.Extended,
	}
}

func unreachable(ev events.Event, m Meta, agentURL, taskID string, f Failure) events.Unreachable {
	cardURL := f.CardURL
	if cardURL == "" {
		cardURL = agentURL
	}
	detail := f.Detail
	if len(detail) > 512 {
		detail = detail[:512]
	}
	return events.Unreachable{
		AgentURL: agentURL, CardURL: cardURL, Reason: f.Reason, Detail: detail,
		TaskID: taskID, AttemptedAt: m.Now.UTC(), Trigger: trigger(ev),
	}
}

// Submission is the core's handling of a2a.task.submitted: the pin it makes
// and what it needs to make it.
type Submission struct {
	ev   events.Event
	meta Meta
	pin  Pin
	body *CardBody // the client's card, parsed
}

// Submit starts pinning a task. A client card is parsed and pinned at once;
// a client digest or no card needs a live observation (see Fetch). The error
// is permanent: a client card that is not a card.
func Submit(ev events.Event, d events.Submitted, m Meta) (*Submission, error) {
	s := &Submission{ev: ev, meta: m, pin: Pin{
		TaskID: d.TaskID, AgentURL: d.AgentURL, CardURL: d.CardURL,
		PinnedAt: m.Time.UTC(), Requirements: d.Requirements(), SubmittedSeq: m.Seq,
	}}
	switch {
	case len(d.Card) > 0:
		card, err := detector.Parse(d.Card)
		if err != nil {
			return nil, fmt.Errorf("the submitted card is not a card: %w", err)
		}
		digest, err := detector.Digest(d.Card)
		if err != nil {
			return nil, err
		}
		s.body = &CardBody{Digest: digest, Raw: d.Card, Card: card}
		s.pin.fill(digest, "", card)
		s.pin.Source = events.PinClientCard
	case d.CardDigest != "":
		s.pin.Source = events.PinClientDigest
		s.pin.Digest = d.CardDigest
	default:
		s.pin.Source = events.PinFirstFetch
	}
	return s, nil
}

// Pin returns the pin as made so far.
func (s *Submission) Pin() Pin { return s.pin }

// ClientCard returns the card the client submitted (nil for a client digest
// or a first fetch): the shell verifies its signatures and passes what it
// found to ClientSignatures before Pinned.
func (s *Submission) ClientCard() []byte {
	if s.body == nil {
		return nil
	}
	return s.body.Raw
}

// ClientSignatures records what verifying the client's card's signatures
// found (nil or empty: unsigned). Without it the pin of a client card
// records no signer, and the stored body's signatures stand in, unverified.
func (s *Submission) ClientSignatures(sigs []detector.Signature) {
	if s.body != nil {
		s.pin.signed(sigs)
	}
}

// UseExtended records, for a task that uses the extended card, which card
// the pin is (events.ExtendedPinned: the extended card, the client's or
// the one observed; events.ExtendedUnavailable: the public card). The shell
// says it before Pinned or Observed; a task that does not use the extended
// card ignores it.
func (s *Submission) UseExtended(state string) {
	if s.pin.Requirements.ExtendedCard {
		s.pin.Extended = state
	}
}

// WithoutCredentials says the shell holds no credentials for the agent's
// origin. The client's card or digest of a task that uses the extended card,
// which carddrift cannot ask the agent for, is set aside (against the public
// card it would read as drift): the task is pinned at its first fetch with
// extended "unavailable". The shell says it before NeedsObservation.
func (s *Submission) WithoutCredentials() {
	p := s.pin
	if !p.Requirements.ExtendedCard || p.Source == events.PinFirstFetch {
		return
	}
	s.body = nil
	s.pin = Pin{TaskID: p.TaskID, AgentURL: p.AgentURL, CardURL: p.CardURL, PinnedAt: p.PinnedAt,
		Requirements: p.Requirements, SubmittedSeq: p.SubmittedSeq, Source: events.PinFirstFetch,
		Extended: events.ExtendedUnavailable}
}

// NeedsObservation reports whether the pin needs a live observation: a
// client digest is checked against the live card, and without a client card
// or digest the first fetch is the pin.
func (s *Submission) NeedsObservation() bool { return s.body == nil }

// Recheck reports whether a (lease) observation is too old to make or check
// this pin: fetched before the client submitted, it may predate the card the
// client planned against. Then an unconditional fetch is due.
func (s *Submission) Recheck(obs Observation) bool {
	if obs.Digest == s.pin.Digest {
		return false
	}
	return obs.VerifiedAt.Before(s.pin.PinnedAt)
}

// NeedsBody returns the digest whose stored body Observed needs (the client
// digest, when the live card is another), or "".
func (s *Submission) NeedsBody(obs *Observation) string {
	if s.pin.Source == events.PinClientDigest && (obs == nil || obs.Digest != s.pin.Digest) {
		return s.pin.Digest
	}
	return ""
}

// Pinned makes the pin of a client card.
func (s *Submission) Pinned() Result {
	return Result{
		StoreCard: s.body, Pin: &s.pin, PinFirst: true,
		Publish: []events.Data{pinned(s.ev, s.pin)}, Outcome: OutcomePinned,
	}
}

// Observed makes the pin from a live observation (obs nil when the fetch
// failed with f) and, for a client digest, the body carddrift stored under
// it (nil when never seen). A first fetch that failed gives a pending pin
// and card.unreachable; a client digest that is not the live card is pinned
// as the client said and judged at once (card.drift).
func (s *Submission) Observed(obs *Observation, f *Failure, digestBody *detector.Card) Result {
	r := Result{PinFirst: true, Pin: &s.pin}
	if obs == nil {
		r.Publish = append(r.Publish, unreachable(s.ev, s.meta, s.pin.AgentURL, s.pin.TaskID, *f))
		if s.pin.Source == events.PinClientDigest && digestBody != nil {
			s.pin.fill(s.pin.Digest, "", digestBody)
		}
		if s.pin.Pending() {
			r.Outcome = OutcomeUnreachable
			return r
		}
		r.Publish = append(r.Publish, pinned(s.ev, s.pin))
		r.Outcome = OutcomePinned
		return r
	}
	switch {
	case s.pin.Source == events.PinFirstFetch || obs.Digest == s.pin.Digest:
		s.pin.observe(*obs)
	default:
		// The client planned against another card than the live one: keep
		// its digest, and its body if carddrift ever stored it.
		if digestBody != nil {
			s.pin.fill(s.pin.Digest, "", digestBody)
		}
		if s.pin.Extended != events.ExtendedPinned {
			s.pin.CardURL = obs.CardURL
		}
	}
	r.Publish = append(r.Publish, pinned(s.ev, s.pin))
	r.Outcome = OutcomePinned
	if s.pin.Source == events.PinClientDigest && obs.Digest != s.pin.Digest {
		r.add(evaluate(s.ev, s.meta, &s.pin, true, digestBody, *obs, nil))
	}
	return r
}

// Replaces reports whether a submission that made incoming may replace the
// task's existing pin: not when the existing one comes from a later
// submission (a redelivery brought an older plan back).
func Replaces(existing, incoming Pin) bool {
	return incoming.SubmittedSeq == 0 || existing.SubmittedSeq <= incoming.SubmittedSeq
}
