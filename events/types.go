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
	TypeSubmitted   = "a2a.task.submitted"
	TypeRequest     = "a2a.task.request"
	TypeStatus      = "a2a.task.status"
	TypeArtifact    = "a2a.task.artifact"
	TypeError       = "a2a.task.error"
	TypeDrift       = "card.drift"
	TypePinned      = "card.pinned"
	TypeObserved    = "card.observed"
	TypeUnreachable = "card.unreachable"
	// TypeInconsistent: replicas behind one agent URL serve different cards
	// (split brain). Since contract v1.1.
	TypeInconsistent = "card.inconsistent"
)

// Types lists every event type, inbound first.
var Types = []string{
	TypeSubmitted, TypeRequest, TypeStatus, TypeArtifact, TypeError,
	TypeDrift, TypePinned, TypeObserved, TypeUnreachable, TypeInconsistent,
}

// Data is implemented by the data type of every event: Submitted, Request,
// Status, Artifact, Error, Drift, Pinned, Observed, Unreachable and
// Inconsistent. Event.Data
// holds one of them (a value, not a pointer, after Decode).
//
// The interface is sealed: only this package's types implement it. Use
// Event.TaskID and Event.AgentURL to read the ids of any event.
type Data interface {
	// EventType returns the CloudEvents type of the event this data belongs to.
	EventType() string
	// ids returns the task id ("" for agent-level events) and agent URL.
	ids() (taskID, agentURL string)
}

// Submitted is the data of a2a.task.submitted: a client submitted a task it
// planned against a card. Card and CardDigest are mutually exclusive; with
// neither, carddrift pins the first card it fetches.
//
// Only TaskID, AgentURL and SkillID are required. The zero Requires (the
// member absent) requires nothing; an empty Posture is the default,
// detector.FailClosed (Decode fills it in, Requirements applies it, and
// Encode omits an empty one); Idempotent defaults to false.
type Submitted struct {
	TaskID     string           `json:"taskId"`
	AgentURL   string           `json:"agentUrl"`
	SkillID    string           `json:"skillId"`
	Requires   Requires         `json:"requires,omitzero"`
	Posture    detector.Posture `json:"posture,omitempty"`
	Idempotent bool             `json:"idempotent"`
	// Card is the card JSON the client planned against, byte for byte as it
	// appeared in the event (digest it with the detector's canonical digest).
	Card       json.RawMessage `json:"card,omitempty"`
	CardDigest string          `json:"cardDigest,omitempty"`
	CardURL    string          `json:"cardUrl,omitempty"`
}

// Requires is what a submitted task needs of the agent. Every member is
// optional; absent means not required.
type Requires struct {
	Streaming         bool     `json:"streaming"`
	PushNotifications bool     `json:"pushNotifications"`
	InputModes        []string `json:"inputModes,omitempty"`
	OutputModes       []string `json:"outputModes,omitempty"`
	// Security names the card security schemes the client authenticates with.
	Security []string `json:"security,omitempty"`
	// Scopes maps a security scheme name to the OAuth scopes the client
	// requests of it. Nil (absent) means the client did not say: the scopes
	// of the pinned card's requirements that apply to the task's skill are
	// assumed. A non-nil empty map says the client requests none. A nil list
	// is sent as [].
	Scopes map[string][]string `json:"scopes,omitzero"`
	// Extensions are the URIs of the agent extensions the client activates.
	Extensions []string `json:"extensions,omitempty"`
	// ExtendedCard reports that the task uses the authenticated extended
	// card.
	ExtendedCard bool `json:"extendedCard,omitempty"`
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

// Requirements returns the task's requirements in the detector's model, with
// the defaults applied (an empty Posture is detector.FailClosed).
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

// Request is the data of a2a.task.request: a client is about to send a
// request for a task. Method is the wire name in any A2A version's spelling
// (detector.ClassifyMethod classifies it); Attempt is 1 for the first try.
type Request struct {
	TaskID   string `json:"taskId"`
	AgentURL string `json:"agentUrl"`
	Method   string `json:"method"`
	Attempt  int    `json:"attempt"`
}

// Status is the data of a2a.task.status: a client observed a status update.
// State is as the agent sent it, v0.3 or v1.0 spelling
// (detector.NormalizeState normalises it).
type Status struct {
	TaskID   string `json:"taskId"`
	AgentURL string `json:"agentUrl"`
	State    string `json:"state"`
	SkillID  string `json:"skillId,omitempty"`
}

// Artifact is the data of a2a.task.artifact: a client received an artifact
// whose parts have MediaTypes.
type Artifact struct {
	TaskID     string   `json:"taskId"`
	AgentURL   string   `json:"agentUrl"`
	ArtifactID string   `json:"artifactId"`
	MediaTypes []string `json:"mediaTypes"`
}

// Error is the data of a2a.task.error: a request for a task failed with a
// JSON-RPC error (detector.IsSchemaClassError classifies Code).
type Error struct {
	TaskID   string `json:"taskId"`
	AgentURL string `json:"agentUrl"`
	Method   string `json:"method"`
	Code     int    `json:"code"`
	Message  string `json:"message"`
}

// Drift is the data of card.drift: the task's pinned card and the live card
// differ. Findings are all findings, sorted, each with Touches set (as
// detector.Evaluate and detector.EvaluateUnknown return them); Verdict says
// what to do.
type Drift struct {
	TaskID   string             `json:"taskId"`
	AgentURL string             `json:"agentUrl"`
	CardURL  string             `json:"cardUrl"`
	Pinned   CardRef            `json:"pinned"`
	Live     CardRef            `json:"live"`
	Findings []detector.Finding `json:"findings"`
	Verdict  detector.Verdict   `json:"verdict"`
	Trigger  Trigger            `json:"trigger"`

	// TouchesKnown reports that every finding carried its touches member,
	// so Finding.Touches says whether it affects the task. Decode sets it.
	// carddrift writes touches with every finding (Encode always does);
	// only a card.drift written before contract v1.1 lacks it, and its
	// Touches are all false and mean nothing (events/client/planner then recomputes
	// them). Not part of the event data.
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

// CardRef identifies one version of a card. Fingerprint is "" (and absent
// from the event) when carddrift never saw the card's body: a task pinned by a
// client digest of a card carddrift never fetched.
type CardRef struct {
	Digest      string `json:"digest"`
	Fingerprint string `json:"fingerprint,omitempty"`
	ETag        string `json:"etag,omitempty"`
	// FetchedAt is zero for a pin made from a client-supplied card or digest.
	FetchedAt time.Time `json:"fetchedAt,omitzero"`
	// Signer is the signature that speaks for a signed card (the first that
	// verified, else the first; detector.Signer): key id, algorithm, JWK
	// thumbprint, whether it verified and why not. nil (absent) for an
	// unsigned card, or one whose signatures carddrift did not record (a
	// pin made before it did, or by a client digest of a card it never saw).
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

// Extended-card states of card.pinned (since contract v1.2), for a task
// that uses the authenticated extended card (requires.extendedCard).
const (
	// ExtendedPinned: the pin is the agent's extended card, and the task is
	// judged against its extended card.
	ExtendedPinned = "pinned"
	// ExtendedUnavailable: carddrift holds no credentials for the agent (or
	// the agent offers no extended card it can ask for): the task is pinned
	// and judged on the public card.
	ExtendedUnavailable = "unavailable"
)

// Pinned is the data of card.pinned: a task's pin was recorded. Source is
// PinClientCard, PinClientDigest or PinFirstFetch. Fingerprint is "" (and
// absent from the event) when the pinned body is unknown, which only a
// PinClientDigest pin of a card carddrift never saw can be.
type Pinned struct {
	TaskID      string  `json:"taskId"`
	AgentURL    string  `json:"agentUrl"`
	CardURL     string  `json:"cardUrl,omitempty"`
	Digest      string  `json:"digest"`
	Fingerprint string  `json:"fingerprint,omitempty"`
	Source      string  `json:"source"`
	Trigger     Trigger `json:"trigger,omitzero"`
	// Signer is who signed the pinned card, as CardRef.Signer.
	Signer *detector.Signature `json:"signer,omitempty"`
	// Extended is ExtendedPinned or ExtendedUnavailable for a task that
	// uses the extended card, "" (absent) otherwise.
	Extended string `json:"extended,omitempty"`
}

// Observed is the data of card.observed: a live fetch (Status 200) or a
// revalidation (Status 304) completed. Agent-level: it has no task. Since
// contract v1.3 it is published when what carddrift knows of the card
// changes (digest, signer, or the result's class) or its heartbeat comes
// due, and stands for Fetches fetches and revalidations (this one, the
// last, included), the first of them at Since. Both are absent (zero)
// when it stands for its own fetch alone, as every v1.2 event does.
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

// Unreachable is the data of card.unreachable: a live fetch failed. It is
// not drift; the pin stays as it was. TaskID is "" for agent-level fetches.
//
// Reason is one of the fetcher's reasons, the one list of the contract
// (fetcher.UnreachableReasons in package store/fetcher: compare with
// string(fetcher.ReasonTimeout) and so on); a later carddrift may add
// reasons, never rename them.
type Unreachable struct {
	AgentURL    string    `json:"agentUrl"`
	CardURL     string    `json:"cardUrl"`
	Reason      string    `json:"reason"`
	Detail      string    `json:"detail,omitempty"`
	TaskID      string    `json:"taskId,omitempty"`
	AttemptedAt time.Time `json:"attemptedAt,omitzero"`
	Trigger     Trigger   `json:"trigger,omitzero"`
}

// Inconsistent is the data of card.inconsistent: replicas behind one agent
// URL serve different cards at once (split brain) — within Window, the live
// digest carddrift's fetches saw alternated (A→B→A→B; detector.Replicas
// decides). It is published once per episode; while the episode lasts,
// card.drift events of tasks on the agent carry a replicas-disagree finding.
// Agent-level: it has no task.
type Inconsistent struct {
	AgentURL string `json:"agentUrl"`
	CardURL  string `json:"cardUrl"`
	// Digests are the digests served within the window, in order of first
	// sight.
	Digests []DigestSeen `json:"digests"`
	// Window is the consistency window, as a Go duration ("2m0s").
	Window Duration `json:"window"`

	// Episode is when the episode began (the lease's Replicas.Since): the
	// event's identity (MsgID), so that every worker, and a worker after a
	// restart, names one episode the same. Not part of the event data:
	// zero after Decode.
	Episode time.Time `json:"-"`
}

// DigestSeen is one card digest an agent served within a window: how many
// fetches (200 or 304) saw it, first and last. It is detector.Sighting, the
// one type of the concept (the lease's window holds them, census reports
// them); card.inconsistent carries it as it is.
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
