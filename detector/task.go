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
	Security   []string `json:"security,omitempty"`
	Posture    Posture  `json:"posture,omitempty"`
	Idempotent bool     `json:"idempotent,omitempty"`
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
	// LiveDigest is the digest of the live card at the last evaluation, and
	// DriftReported the Nats-Msg-Id of the last card.drift published for this
	// pin: together they keep one card.drift per (pin, live card, rules) even
	// beyond the stream's duplicate window.
	LiveDigest    string `json:"liveDigest,omitempty"`
	DriftReported string `json:"driftReported,omitempty"`
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
