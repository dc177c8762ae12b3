package task

import (
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// Pin is the state of one task: what it was planned against (the pin proper)
// and the bookkeeping that makes verdicts independent of delivery order and
// published once. It is the record the task store holds (JSON), one per task.
type Pin struct {
	TaskID          string    `json:"taskId"`
	AgentURL        string    `json:"agentUrl"`
	CardURL         string    `json:"cardUrl,omitempty"`
	Digest          string    `json:"digest"`
	Fingerprint     string    `json:"fingerprint"`
	ProtocolVersion string    `json:"protocolVersion,omitempty"`
	CardVersion     string    `json:"cardVersion,omitempty"`
	ETag            string    `json:"etag,omitempty"`
	PinnedAt        time.Time `json:"pinnedAt"`
	// Signatures are what verifying the pinned card's signatures found when
	// the pin was made (one per entry of its "signatures" array; none for an
	// unsigned card), and SignaturesKnown says they were recorded. Signatures
	// never change a digest, and the body stored under one may carry other
	// signatures than the card pinned, so the pin is where who signed it is
	// kept. A pin made before carddrift recorded signatures, or from a body
	// it only has by digest, has SignaturesKnown false: the stored body's
	// own signatures then stand in, unverified.
	Signatures      []detector.Signature `json:"signatures,omitempty"`
	SignaturesKnown bool                 `json:"signaturesKnown,omitempty"`
	// Source is how the pin was made: events.PinClientCard, PinClientDigest or
	// PinFirstFetch.
	Source       string                `json:"source"`
	Requirements detector.Requirements `json:"requirements"`
	// Extended says, for a task that uses the authenticated extended card
	// (Requirements.ExtendedCard), which card the pin is:
	// events.ExtendedPinned — the extended card (Digest, Fingerprint and
	// Signatures are its own, and every transition observes the extended
	// card); events.ExtendedUnavailable — the public card, because
	// carddrift holds no credentials for the agent (or the agent offers no
	// extended card it can ask for). "" for any other task. CardURL stays
	// the public card's: the extended card is found from it.
	Extended string `json:"extended,omitempty"`
	// SchemaErrorAt is when the task last met a schema-class error (zero if
	// never since the pin was made). A retry after it on a pin that no longer
	// matches the live card is a blind retry.
	SchemaErrorAt time.Time `json:"schemaErrorAt,omitzero"`
	// SchemaErrorCode is the code of that error.
	SchemaErrorCode int `json:"schemaErrorCode,omitempty"`

	// Positions of the task's events in the lifecycle stream (JetStream
	// stream sequences), which let the core judge events that a redelivery
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

// Key is the task id: the store's key for the record.
func (p Pin) Key() string { return p.TaskID }

// Clone returns a copy that shares no slice or map with p.
func (p Pin) Clone() Pin {
	p.Reported = slices.Clone(p.Reported)
	p.Signatures = slices.Clone(p.Signatures)
	r := &p.Requirements
	r.InputModes = slices.Clone(r.InputModes)
	r.OutputModes = slices.Clone(r.OutputModes)
	r.Security = slices.Clone(r.Security)
	r.Extensions = slices.Clone(r.Extensions)
	if r.Scopes != nil {
		m := make(map[string][]string, len(r.Scopes))
		for k, v := range r.Scopes {
			m[k] = slices.Clone(v)
		}
		r.Scopes = m
	}
	return p
}

// Detach returns a copy of p that shares no memory with it, strings
// included: a pin made from a parsed card holds slices of the card's whole
// body (its version, its signatures' key ids), which a cached pin must not
// keep alive.
func (p Pin) Detach() Pin {
	p = p.Clone()
	detachStrings(reflect.ValueOf(&p).Elem())
	return p
}

// detachStrings copies every string v reaches in place (v's slices and
// maps are its own: Clone's).
func detachStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(strings.Clone(v.String()))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			detachStrings(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			detachStrings(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			k.Set(it.Key())
			e.Set(it.Value())
			detachStrings(k)
			detachStrings(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	}
}

// UsesExtended reports a pin of the extended card: its transitions observe
// the extended card.
func (p Pin) UsesExtended() bool {
	return p.Requirements.ExtendedCard && p.Extended != events.ExtendedUnavailable
}

// LostExtended reports a pin of the extended card observed through the
// public card: state, the extended-card state of the observation
// (Transition.UseExtended), is events.ExtendedUnavailable — the extended
// card can no longer be asked for (the credentials for the agent's origin
// were removed, or the agent stopped offering one). Such a task is not
// judged against the public card, which was never what it planned on: it
// is pinned again on the public card (OnPublicCard). Every shell that
// judges a task asks the core this (Transition.Judge, the planner's
// Checker).
func (p Pin) LostExtended(state string) bool {
	return p.Extended == events.ExtendedPinned && state == events.ExtendedUnavailable && !p.Pending()
}

// OnPublicCard returns the pin made again on the public card obs, extended
// "unavailable", as for a task submitted without credentials (a pin that
// LostExtended): its digest, fingerprint and signatures are the public
// card's, and no live digest was judged against it yet.
func (p Pin) OnPublicCard(obs Observation) Pin {
	p = p.Clone()
	p.Extended = events.ExtendedUnavailable
	p.Source = events.PinFirstFetch
	p.observe(obs)
	p.LiveDigest = ""
	return p
}

// observe pins the observed card, with its signatures, and records where it
// was observed: the public card's URL (the extended card's endpoint is
// found from the public card, so a pin of the extended card keeps the
// public card URL it was given).
func (p *Pin) observe(obs Observation) {
	p.fill(obs.Digest, obs.Fingerprint, obs.Card)
	p.signed(obs.Signatures)
	if p.Extended != events.ExtendedPinned {
		p.CardURL = obs.CardURL
	}
	p.ETag = obs.ETag
}

// Pending reports a pin whose card is not known yet (its first fetch failed).
func (p Pin) Pending() bool { return p.Digest == "" }

// HasReported reports whether a card.drift with this id was published for
// the pin.
func (p *Pin) HasReported(id string) bool { return slices.Contains(p.Reported, id) }

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

// fill records the card a pin was made against (fingerprint: the card's,
// if known; "" computes it); its signatures are not known until signed says
// who signed it.
func (p *Pin) fill(digest, fingerprint string, c *detector.Card) {
	p.Signatures, p.SignaturesKnown = nil, false
	p.Digest, p.Fingerprint = digest, fingerprint
	if fingerprint == "" {
		p.Fingerprint = detector.Fingerprint(c)
	}
	p.CardVersion = c.Version
	p.ProtocolVersion = ""
	if vs := c.ProtocolVersions(); len(vs) > 0 {
		p.ProtocolVersion = vs[0]
	}
}

// signed records what verifying the pinned card's signatures found (nil or
// empty: the card is unsigned).
func (p *Pin) signed(sigs []detector.Signature) {
	p.Signatures, p.SignaturesKnown = slices.Clone(sigs), true
}

// Signer returns the signature that speaks for the pinned card
// (detector.Signer), or nil when the card is unsigned or its signatures were
// not recorded.
func (p Pin) Signer() *detector.Signature {
	return signer(p.Signatures)
}

func signer(sigs []detector.Signature) *detector.Signature {
	s, _, ok := detector.Signer(sigs)
	if !ok {
		return nil
	}
	return &s
}

// card returns the pinned card body as the detector must see it: with the
// signatures the pin recorded (the stored body under the digest may be
// another signing of the same content), or the body as it is when the pin
// recorded none. body is shared and never changed.
func (p Pin) card(body *detector.Card) *detector.Card {
	if body == nil || !p.SignaturesKnown {
		return body
	}
	c := *body
	c.Signatures = p.Signatures
	c.HasSignatures = len(p.Signatures) > 0
	return &c
}
