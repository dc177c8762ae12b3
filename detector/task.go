package detector

import "time"

// Posture is how a task reacts to breaking drift that touches it.
type Posture string

// Postures from the pinning write-up.
const (
	// FailClosed aborts on any impacting breaking drift and surfaces
	// re-negotiation.
	FailClosed Posture = "fail-closed"
	// Degrade re-plans against the new card when the task is idempotent and its
	// required skill is still offered; otherwise it aborts like FailClosed.
	Degrade Posture = "degrade"
)

// ParsePosture reads "fail-closed" or "degrade"; "" means FailClosed.
func ParsePosture(s string) (Posture, error) {
	switch Posture(s) {
	case "", FailClosed:
		return FailClosed, nil
	case Degrade:
		return Degrade, nil
	}
	return "", &ValueError{Field: "posture", Value: s, Allowed: []string{string(FailClosed), string(Degrade)}}
}

// Action is what a planner should do with a task.
type Action string

// Actions of a verdict.
const (
	Abort    Action = "abort"
	Replan   Action = "replan"
	Continue Action = "continue"
)

// Requirements is what a task needs of the agent, as the client planned it.
type Requirements struct {
	SkillID           string   `json:"skillId,omitempty"`
	Streaming         bool     `json:"streaming,omitempty"`
	PushNotifications bool     `json:"pushNotifications,omitempty"`
	InputModes        []string `json:"inputModes,omitempty"`
	OutputModes       []string `json:"outputModes,omitempty"`
	// Security names the security schemes the client authenticates with.
	Security []string `json:"security,omitempty"`
	// Scopes maps a security scheme name to the OAuth scopes the client
	// requests of it. Nil: the client did not say, and the scopes of the pinned
	// requirements that apply to the task's skill are assumed.
	Scopes map[string][]string `json:"scopes,omitempty"`
	// Extensions are the extension URIs the client activates.
	Extensions []string `json:"extensions,omitempty"`
	// ExtendedCard reports that the task uses the authenticated extended card.
	ExtendedCard bool    `json:"extendedCard,omitempty"`
	Posture      Posture `json:"posture,omitempty"`
	Idempotent   bool    `json:"idempotent,omitempty"`
}

// Pin is what a task was planned against.
type Pin struct {
	TaskID           string    `json:"taskId"`
	AgentURL         string    `json:"agentUrl"`
	CardURL          string    `json:"cardUrl,omitempty"`
	Digest           string    `json:"digest"`
	Fingerprint      string    `json:"fingerprint"`
	StructuralDigest string    `json:"structuralDigest,omitempty"`
	ProtocolVersion  string    `json:"protocolVersion,omitempty"`
	CardVersion      string    `json:"cardVersion,omitempty"`
	ETag             string    `json:"etag,omitempty"`
	PinnedAt         time.Time `json:"pinnedAt"`
	// Source is how the pin was made: "client-card", "client-digest" or "first-fetch".
	Source       string       `json:"source"`
	Requirements Requirements `json:"requirements"`
	// SchemaErrorAt is when the task last met a schema-class error (zero if
	// never since the pin was made). A retry after it on a pin that no longer
	// matches the live card is a blind retry.
	SchemaErrorAt time.Time `json:"schemaErrorAt,omitzero"`
	// SchemaErrorCode is the code of that error.
	SchemaErrorCode int `json:"schemaErrorCode,omitempty"`

	// Positions of the task's events in the lifecycle stream (JetStream
	// stream sequences), which let a worker judge events that a redelivery
	// brought out of order as if they had come in order: SubmittedSeq of the
	// submission that made this pin, SchemaErrorSeq of the schema-class error
	// at SchemaErrorAt, and RetrySeq of the latest retry (RetryMethod,
	// RetryAttempt). Zero means unknown.
	SubmittedSeq   uint64 `json:"submittedSeq,omitempty"`
	SchemaErrorSeq uint64 `json:"schemaErrorSeq,omitempty"`
	RetrySeq       uint64 `json:"retrySeq,omitempty"`
	RetryMethod    string `json:"retryMethod,omitempty"`
	RetryAttempt   int    `json:"retryAttempt,omitempty"`
	// LiveDigest is the digest of the live card at the last evaluation, and
	// Reported the Nats-Msg-Ids of the card.drift events published for this
	// pin (the most recent MaxReported): together they keep one card.drift per
	// (pin, live card, rules) even beyond the stream's duplicate window, when
	// a task alternates between rule sets.
	LiveDigest string   `json:"liveDigest,omitempty"`
	Reported   []string `json:"reported,omitempty"`
}

// MaxReported bounds Pin.Reported.
const MaxReported = 32

// HasReported reports whether a card.drift with this id was published for
// the pin.
func (p *Pin) HasReported(id string) bool {
	for _, r := range p.Reported {
		if r == id {
			return true
		}
	}
	return false
}

// AddReported records a published card.drift id, keeping the newest
// MaxReported.
func (p *Pin) AddReported(id string) {
	if p.HasReported(id) {
		return
	}
	p.Reported = append(p.Reported, id)
	if n := len(p.Reported); n > MaxReported {
		p.Reported = append([]string(nil), p.Reported[n-MaxReported:]...)
	}
}

// Verdict is the task-scoped outcome of evaluating drift.
type Verdict struct {
	Action  Action  `json:"action"`
	Posture Posture `json:"posture"`
	Reason  string  `json:"reason"`
	// Impacting are the findings that touch the task (a subset of all the
	// findings between the two cards), in Diff order.
	Impacting []Finding `json:"-"`
}
