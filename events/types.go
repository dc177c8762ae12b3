package events

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// CloudEvents types. The a2a.task.* types are published by A2A clients, the
// card.* types by carddrift.
const (
	TypeSubmitted    = "a2a.task.submitted"
	TypeRequest      = "a2a.task.request"
	TypeStatus       = "a2a.task.status"
	TypeArtifact     = "a2a.task.artifact"
	TypeError        = "a2a.task.error"
	TypeDrift        = "card.drift"
	TypePinned       = "card.pinned"
	TypeObserved     = "card.observed"
	TypeUnreachable  = "card.unreachable"
	TypeInconsistent = "card.inconsistent"
)

// Types lists every event type, inbound first.
var Types = []string{
	TypeSubmitted, TypeRequest, TypeStatus, TypeArtifact, TypeError,
	TypeDrift, TypePinned, TypeObserved, TypeUnreachable, TypeInconsistent,
}

// Data is the data of an event, one of this package's types (sealed);
// Event.Data holds a value of it after Decode.
type Data interface {
	EventType() string
	ids() (taskID, agentURL string) // taskID "" for agent-level events
}

// Submitted is the data of a2a.task.submitted. Card and CardDigest are
// mutually exclusive; with neither, carddrift pins the first card it
// fetches. An empty Posture means detector.FailClosed (Decode fills it in).
type Submitted struct {
	TaskID     string           `json:"taskId"`
	AgentURL   string           `json:"agentUrl"`
	SkillID    string           `json:"skillId"`
	Requires   Requires         `json:"requires,omitzero"`
	Posture    detector.Posture `json:"posture,omitempty"`
	Idempotent bool             `json:"idempotent"`
	// Card is the card JSON as it appeared in the event.
	Card       json.RawMessage `json:"card,omitempty"`
	CardDigest string          `json:"cardDigest,omitempty"`
	CardURL    string          `json:"cardUrl,omitempty"`
}

// Requires is what a submitted task needs of the agent; absent is not
// required.
type Requires struct {
	Streaming         bool     `json:"streaming"`
	PushNotifications bool     `json:"pushNotifications"`
	InputModes        []string `json:"inputModes,omitempty"`
	OutputModes       []string `json:"outputModes,omitempty"`
	Security          []string `json:"security,omitempty"`
	// Scopes maps a security scheme to the OAuth scopes requested of it.
	// Nil: the pinned card's scopes for the skill are assumed; empty: none.
	Scopes       map[string][]string `json:"scopes,omitzero"`
	Extensions   []string            `json:"extensions,omitempty"`
	ExtendedCard bool                `json:"extendedCard,omitempty"`
}

// MarshalJSON writes nil scope lists as [] (the schema requires arrays).
func (r Requires) MarshalJSON() ([]byte, error) {
	type plain Requires
	for _, v := range r.Scopes {
		if v == nil {
			scopes := make(map[string][]string, len(r.Scopes))
			for k, v := range r.Scopes {
				scopes[k] = append([]string{}, v...)
			}
			r.Scopes = scopes
			break
		}
	}
	return json.Marshal(plain(r))
}

// Requirements returns the task's requirements in the detector's model.
func (s Submitted) Requirements() detector.Requirements {
	posture := s.Posture
	if posture == "" {
		posture = detector.FailClosed
	}
	return detector.Requirements{
		SkillID:           s.SkillID,
		Streaming:         s.Requires.Streaming,
		PushNotifications: s.Requires.PushNotifications,
		InputModes:        s.Requires.InputModes,
		OutputModes:       s.Requires.OutputModes,
		Security:          s.Requires.Security,
		Scopes:            s.Requires.Scopes,
		Extensions:        s.Requires.Extensions,
		ExtendedCard:      s.Requires.ExtendedCard,
		Posture:           posture,
		Idempotent:        s.Idempotent,
	}
}

// Request is the data of a2a.task.request. Method is the wire name in any
// A2A version's spelling; Attempt is 1 for the first try.
type Request struct {
	TaskID   string `json:"taskId"`
	AgentURL string `json:"agentUrl"`
	Method   string `json:"method"`
	Attempt  int    `json:"attempt"`
}

// Status is the data of a2a.task.status; State in v0.3 or v1.0 spelling.
type Status struct {
	TaskID   string `json:"taskId"`
	AgentURL string `json:"agentUrl"`
	State    string `json:"state"`
	SkillID  string `json:"skillId,omitempty"`
}

// Artifact is the data of a2a.task.artifact.
type Artifact struct {
	TaskID     string   `json:"taskId"`
	AgentURL   string   `json:"agentUrl"`
	ArtifactID string   `json:"artifactId"`
	MediaTypes []string `json:"mediaTypes"`
}

// Error is the data of a2a.task.error: a JSON-RPC error of a request.
type Error struct {
	TaskID   string `json:"taskId"`
	AgentURL string `json:"agentUrl"`
	Method   string `json:"method"`
	Code     int    `json:"code"`
	Message  string `json:"message"`
}

// Drift is the data of card.drift: every finding between the pinned and
// the live card, sorted, each with Touches set, and the verdict.
type Drift struct {
	TaskID   string             `json:"taskId"`
	AgentURL string             `json:"agentUrl"`
	CardURL  string             `json:"cardUrl"`
	Pinned   CardRef            `json:"pinned"`
	Live     CardRef            `json:"live"`
	Findings []detector.Finding `json:"findings"`
	Verdict  detector.Verdict   `json:"verdict"`
	Trigger  Trigger            `json:"trigger"`

	// TouchesKnown (set by Decode, not event data) reports that every
	// finding carried touches; a pre-v1.1 card.drift's Touches mean nothing.
	TouchesKnown bool `json:"-"`
}

// MarshalJSON writes nil Findings as [] (the schema requires an array).
func (d Drift) MarshalJSON() ([]byte, error) {
	type plain Drift
	if d.Findings == nil {
		d.Findings = []detector.Finding{}
	}
	return json.Marshal(plain(d))
}

// CardRef identifies one version of a card. Fingerprint is "" when
// carddrift never saw the body (a client digest of an unfetched card).
type CardRef struct {
	Digest      string `json:"digest"`
	Fingerprint string `json:"fingerprint,omitempty"`
	ETag        string `json:"etag,omitempty"`
	// FetchedAt is zero for a pin made from a client-supplied card or digest.
	FetchedAt time.Time `json:"fetchedAt,omitzero"`
	// Signer is the signature that speaks for the card (detector.Signer);
	// nil for an unsigned card or one whose signatures were not recorded.
	Signer *detector.Signature `json:"signer,omitempty"`
}

// Trigger names the lifecycle event that caused an evaluation. CloudEvents
// ids are unique per source only, so Source belongs to the identity.
type Trigger struct {
	EventID string `json:"eventId"`
	Type    string `json:"type"`
	Source  string `json:"source,omitempty"`
}

// Pin sources of card.pinned.
const (
	PinClientCard   = "client-card"
	PinClientDigest = "client-digest"
	PinFirstFetch   = "first-fetch"
)

// Extended-card states of card.pinned for a task that uses the extended
// card: pinned on it, or (no credentials, none offered) on the public card.
const (
	ExtendedPinned      = "pinned"
	ExtendedUnavailable = "unavailable"
)

// Pinned is the data of card.pinned. Source is one of the Pin* constants;
// Fingerprint is "" as in CardRef.
type Pinned struct {
	TaskID      string              `json:"taskId"`
	AgentURL    string              `json:"agentUrl"`
	CardURL     string              `json:"cardUrl,omitempty"`
	Digest      string              `json:"digest"`
	Fingerprint string              `json:"fingerprint,omitempty"`
	Source      string              `json:"source"`
	Trigger     Trigger             `json:"trigger,omitzero"`
	Signer      *detector.Signature `json:"signer,omitempty"`
	Extended    string              `json:"extended,omitempty"`
}

// Observed is the data of card.observed (agent-level): a fetch (200) or
// revalidation (304). It stands for Fetches fetches since Since, both zero
// when it stands for its own fetch alone.
type Observed struct {
	AgentURL  string    `json:"agentUrl"`
	CardURL   string    `json:"cardUrl"`
	Digest    string    `json:"digest"`
	Status    int       `json:"status"`
	ETag      string    `json:"etag,omitempty"`
	FetchedAt time.Time `json:"fetchedAt"`
	LatencyMs int64     `json:"latencyMs"`
	Fetches   int       `json:"fetches,omitempty"`
	Since     time.Time `json:"since,omitzero"`
}

// Unreachable is the data of card.unreachable: a live fetch failed (TaskID
// "" for agent-level fetches). Reason is one of fetcher.UnreachableReasons;
// reasons may be added, never renamed.
type Unreachable struct {
	AgentURL    string    `json:"agentUrl"`
	CardURL     string    `json:"cardUrl"`
	Reason      string    `json:"reason"`
	Detail      string    `json:"detail,omitempty"`
	TaskID      string    `json:"taskId,omitempty"`
	AttemptedAt time.Time `json:"attemptedAt,omitzero"`
	Trigger     Trigger   `json:"trigger,omitzero"`
}

// Inconsistent is the data of card.inconsistent (agent-level, once per
// episode): replicas behind one agent URL served alternating digests
// within Window (detector.Replicas decides). Digests are in order of first
// sight.
type Inconsistent struct {
	AgentURL string       `json:"agentUrl"`
	CardURL  string       `json:"cardUrl"`
	Digests  []DigestSeen `json:"digests"`
	Window   Duration     `json:"window"`
	// Episode is when the episode began: the event's identity (MsgID).
	// Not event data: zero after Decode.
	Episode time.Time `json:"-"`
}

// DigestSeen is one digest served within a window (detector.Sighting).
type DigestSeen = detector.Sighting

// Duration is a time.Duration written as its Go string ("2m0s").
type Duration time.Duration

// MarshalText writes the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return errors.New("not a duration: " + string(b))
	}
	*d = Duration(v)
	return nil
}

// EventType implements Data.
func (Submitted) EventType() string    { return TypeSubmitted }
func (Request) EventType() string      { return TypeRequest }
func (Status) EventType() string       { return TypeStatus }
func (Artifact) EventType() string     { return TypeArtifact }
func (Error) EventType() string        { return TypeError }
func (Drift) EventType() string        { return TypeDrift }
func (Pinned) EventType() string       { return TypePinned }
func (Observed) EventType() string     { return TypeObserved }
func (Unreachable) EventType() string  { return TypeUnreachable }
func (Inconsistent) EventType() string { return TypeInconsistent }

func (d Submitted) ids() (string, string)    { return d.TaskID, d.AgentURL }
func (d Request) ids() (string, string)      { return d.TaskID, d.AgentURL }
func (d Status) ids() (string, string)       { return d.TaskID, d.AgentURL }
func (d Artifact) ids() (string, string)     { return d.TaskID, d.AgentURL }
func (d Error) ids() (string, string)        { return d.TaskID, d.AgentURL }
func (d Drift) ids() (string, string)        { return d.TaskID, d.AgentURL }
func (d Pinned) ids() (string, string)       { return d.TaskID, d.AgentURL }
func (d Observed) ids() (string, string)     { return "", d.AgentURL }
func (d Unreachable) ids() (string, string)  { return d.TaskID, d.AgentURL }
func (d Inconsistent) ids() (string, string) { return "", d.AgentURL }
