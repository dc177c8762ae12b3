package events

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/schemas"
)

// converter turns a validated value tree into typed data without parsing
// again. The schema has already checked types and required members, so
// missing members read as zero values; the only failures left are values the
// schema accepts but Go cannot hold (an integer beyond int64, a date-time
// time.Parse rejects such as a leap second), reported as schema violations.
type converter struct {
	typ string
	err *schemas.ValidationError
}

func (c *converter) fail(field, reason string) {
	if c.err == nil {
		c.err = &schemas.ValidationError{Type: c.typ, Field: field, Reason: reason}
	}
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func boolean(m map[string]any, k string) bool {
	b, _ := m[k].(bool)
	return b
}

func obj(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}

func strs(m map[string]any, k string) []string {
	a, ok := m[k].([]any)
	if !ok {
		return nil
	}
	out := make([]string, len(a))
	for i, v := range a {
		out[i], _ = v.(string)
	}
	return out
}

// scopes reads a {scheme: [scope]} object; nil when it is absent.
func scopes(m map[string]any) map[string][]string {
	if m == nil {
		return nil
	}
	out := make(map[string][]string, len(m))
	for k := range m {
		out[k] = strs(m, k)
	}
	return out
}

func (c *converter) integer(m map[string]any, k, field string) int64 {
	n, ok := m[k].(json.Number)
	if !ok {
		return 0
	}
	if v, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return v
	}
	// The schema's integer type admits 1.0 and 1e3.
	r, ok := new(big.Rat).SetString(string(n))
	if ok && r.IsInt() && r.Num().IsInt64() {
		return r.Num().Int64()
	}
	c.fail(field, "integer out of range: "+string(n))
	return 0
}

func (c *converter) intField(m map[string]any, k, field string) int {
	v := c.integer(m, k, field)
	if v > math.MaxInt32 || v < math.MinInt32 {
		c.fail(field, "integer out of range: "+strconv.FormatInt(v, 10))
		return 0
	}
	return int(v)
}

func (c *converter) time(m map[string]any, k, field string) time.Time {
	s, ok := m[k].(string)
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		c.fail(field, "unsupported date-time: "+s)
	}
	return t
}

func trigger(m map[string]any) Trigger {
	if m == nil {
		return Trigger{}
	}
	return Trigger{EventID: str(m, "eventId"), Type: str(m, "type"), Source: str(m, "source")}
}

func (c *converter) cardRef(m map[string]any, field string) CardRef {
	return CardRef{
		Digest:      str(m, "digest"),
		Fingerprint: str(m, "fingerprint"),
		ETag:        str(m, "etag"),
		FetchedAt:   c.time(m, "fetchedAt", field+"/fetchedAt"),
		Signer:      signer(obj(m, "signer")),
	}
}

// signer reads a signer object (nil when absent).
func signer(m map[string]any) *detector.Signature {
	if m == nil {
		return nil
	}
	verified, _ := m["verified"].(bool)
	return &detector.Signature{
		KeyID: str(m, "kid"), Alg: str(m, "alg"), JKU: str(m, "jku"), Thumbprint: str(m, "thumbprint"),
		Source: str(m, "source"), Verified: verified, Reason: str(m, "reason"),
	}
}

// convert builds the typed data of typ from validated tree v. card is the
// raw bytes of the submitted card member, if any.
func convert(typ string, v any, card []byte) (Data, *schemas.ValidationError) {
	m, _ := v.(map[string]any)
	c := &converter{typ: typ}
	var d Data
	switch typ {
	case TypeSubmitted:
		// Absent requires, posture and idempotent take their defaults:
		// nothing required, fail-closed, not idempotent.
		req := obj(m, "requires")
		posture := detector.Posture(str(m, "posture"))
		if posture == "" {
			posture = detector.FailClosed
		}
		s := Submitted{
			TaskID:   str(m, "taskId"),
			AgentURL: str(m, "agentUrl"),
			SkillID:  str(m, "skillId"),
			Requires: Requires{
				Streaming:         boolean(req, "streaming"),
				PushNotifications: boolean(req, "pushNotifications"),
				InputModes:        strs(req, "inputModes"),
				OutputModes:       strs(req, "outputModes"),
				Security:          strs(req, "security"),
				Scopes:            scopes(obj(req, "scopes")),
				Extensions:        strs(req, "extensions"),
				ExtendedCard:      boolean(req, "extendedCard"),
			},
			Posture:    posture,
			Idempotent: boolean(m, "idempotent"),
			CardDigest: str(m, "cardDigest"),
			CardURL:    str(m, "cardUrl"),
		}
		if _, ok := m["card"]; ok && card != nil {
			s.Card = json.RawMessage(bytes.Clone(card))
		}
		d = s
	case TypeRequest:
		d = Request{
			TaskID:   str(m, "taskId"),
			AgentURL: str(m, "agentUrl"),
			Method:   str(m, "method"),
			Attempt:  c.intField(m, "attempt", "/attempt"),
		}
	case TypeStatus:
		d = Status{
			TaskID:   str(m, "taskId"),
			AgentURL: str(m, "agentUrl"),
			State:    str(m, "state"),
			SkillID:  str(m, "skillId"),
		}
	case TypeArtifact:
		d = Artifact{
			TaskID:     str(m, "taskId"),
			AgentURL:   str(m, "agentUrl"),
			ArtifactID: str(m, "artifactId"),
			MediaTypes: strs(m, "mediaTypes"),
		}
	case TypeError:
		d = Error{
			TaskID:   str(m, "taskId"),
			AgentURL: str(m, "agentUrl"),
			Method:   str(m, "method"),
			Code:     c.intField(m, "code", "/code"),
			Message:  str(m, "message"),
		}
	case TypeDrift:
		fs, _ := m["findings"].([]any)
		findings := make([]detector.Finding, 0, len(fs))
		touchesKnown := true
		for i, f := range fs {
			fm, _ := f.(map[string]any)
			sev, err := detector.ParseSeverity(str(fm, "severity"))
			if err != nil {
				c.fail("/findings/"+strconv.Itoa(i)+"/severity", err.Error())
			}
			touches, ok := fm["touches"].(bool)
			touchesKnown = touchesKnown && ok
			findings = append(findings, detector.Finding{
				Rule:      str(fm, "rule"),
				Severity:  sev,
				Path:      str(fm, "path"),
				Before:    fm["before"],
				After:     fm["after"],
				Message:   str(fm, "message"),
				Skill:     str(fm, "skill"),
				Scheme:    str(fm, "scheme"),
				Scope:     str(fm, "scope"),
				Extension: str(fm, "extension"),
				Touches:   touches,
			})
		}
		vm := obj(m, "verdict")
		d = Drift{
			TouchesKnown: touchesKnown,
			TaskID:       str(m, "taskId"),
			AgentURL:     str(m, "agentUrl"),
			CardURL:      str(m, "cardUrl"),
			Pinned:       c.cardRef(obj(m, "pinned"), "/pinned"),
			Live:         c.cardRef(obj(m, "live"), "/live"),
			Findings:     findings,
			Verdict: detector.Verdict{
				Action:      detector.Action(str(vm, "action")),
				Posture:     detector.Posture(str(vm, "posture")),
				Reason:      str(vm, "reason"),
				ReplanSkill: str(vm, "replanSkill"),
			},
			Trigger: trigger(obj(m, "trigger")),
		}
	case TypePinned:
		d = Pinned{
			TaskID:      str(m, "taskId"),
			AgentURL:    str(m, "agentUrl"),
			CardURL:     str(m, "cardUrl"),
			Digest:      str(m, "digest"),
			Fingerprint: str(m, "fingerprint"),
			Source:      str(m, "source"),
			Trigger:     trigger(obj(m, "trigger")),
			Signer:      signer(obj(m, "signer")),
			Extended:    str(m, "extended"),
		}
	case TypeObserved:
		d = Observed{
			AgentURL:  str(m, "agentUrl"),
			CardURL:   str(m, "cardUrl"),
			Digest:    str(m, "digest"),
			Status:    c.intField(m, "status", "/status"),
			ETag:      str(m, "etag"),
			FetchedAt: c.time(m, "fetchedAt", "/fetchedAt"),
			LatencyMs: c.integer(m, "latencyMs", "/latencyMs"),
			Fetches:   c.intField(m, "fetches", "/fetches"),
			Since:     c.time(m, "since", "/since"),
		}
	case TypeUnreachable:
		d = Unreachable{
			AgentURL:    str(m, "agentUrl"),
			CardURL:     str(m, "cardUrl"),
			Reason:      str(m, "reason"),
			Detail:      str(m, "detail"),
			TaskID:      str(m, "taskId"),
			AttemptedAt: c.time(m, "attemptedAt", "/attemptedAt"),
			Trigger:     trigger(obj(m, "trigger")),
		}
	case TypeInconsistent:
		ds, _ := m["digests"].([]any)
		seen := make([]DigestSeen, 0, len(ds))
		for i, x := range ds {
			dm, _ := x.(map[string]any)
			field := "/digests/" + strconv.Itoa(i)
			seen = append(seen, DigestSeen{
				Digest:    str(dm, "digest"),
				Count:     c.intField(dm, "count", field+"/count"),
				FirstSeen: c.time(dm, "firstSeen", field+"/firstSeen"),
				LastSeen:  c.time(dm, "lastSeen", field+"/lastSeen"),
			})
		}
		var window Duration
		if err := window.UnmarshalText([]byte(str(m, "window"))); err != nil {
			c.fail("/window", "not a duration: "+str(m, "window"))
		}
		d = Inconsistent{AgentURL: str(m, "agentUrl"), CardURL: str(m, "cardUrl"), Digests: seen, Window: window}
	default:
		return nil, &schemas.ValidationError{Type: typ, Reason: "no Go type for this event type"}
	}
	if c.err != nil {
		return nil, c.err
	}
	return d, nil
}
