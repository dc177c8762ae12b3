package events

import (
	"sync"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/schemas"
)

// Encode validates the data it writes. It used to parse its own JSON back
// into a value tree and validate the tree; now it applies the schema's
// compiled checks (schemas.Check, the nodes the tree walker applies) to
// the Go values themselves, walking each data type as json.Marshal writes
// it: the members it writes (omitempty members only when set), their
// values as they appear in the JSON. The walk only accepts: data it does
// not accept (or a type or schema version it does not know) goes the old
// way, JSON parsed into a tree and validated by ValidateValue, whose
// decision and error stand. TestTypedChecksDifferential and
// FuzzTypedChecks hold the walk to the JSON Schema validator on the
// marshalled data (the same decision), and TestTypedChecksCoverMembers to
// json.Marshal (every member it writes is one the walk checks).

// checkTables holds the typed checks of every type's current schema.
var checkTables = sync.OnceValue(func() map[string]*walkers {
	out := map[string]*walkers{}
	for _, typ := range Types {
		s, err := schemas.Lookup(typ)
		if err != nil {
			continue
		}
		out[typ] = newWalkers(s)
	}
	return out
})

// walkers are the checks one type's walk applies, by place.
type walkers struct {
	schema *schemas.Schema
	root   schemas.Check

	taskID, agentURL, cardURL schemas.Check
	// a2a.task.*
	method, attempt, state, skillID, artifactID, mediaTypes, code, message schemas.Check
	// card.pinned
	digest, fingerprint, source schemas.Check
	trigger                     triggerChecks
	signer                      signerChecks
	// card.observed
	status, etag, fetchedAt, latencyMs, fetches, since schemas.Check
	// card.unreachable
	reason, detail, attemptedAt schemas.Check
	// card.drift
	pinned, live         cardRefChecks
	findings             schemas.Check
	finding              findingChecks
	verdict              schemas.Check
	action, posture, why schemas.Check
	digests, window      schemas.Check
	seen                 sightingChecks
}

type triggerChecks struct{ root, eventID, typ, source schemas.Check }

type signerChecks struct {
	root, kid, alg, jku, thumbprint, source, verified, reason schemas.Check
}

type cardRefChecks struct {
	root, digest, fingerprint, etag, fetchedAt schemas.Check
	signer                                     signerChecks
}

type findingChecks struct {
	root, rule, severity, path, before, after, message, skill, scheme, scope, extension, touches schemas.Check
}

type sightingChecks struct{ root, digest, count, firstSeen, lastSeen schemas.Check }

func newTrigger(c schemas.Check) triggerChecks {
	return triggerChecks{root: c, eventID: c.Member("eventId"), typ: c.Member("type"), source: c.Member("source")}
}

func newSigner(c schemas.Check) signerChecks {
	return signerChecks{root: c, kid: c.Member("kid"), alg: c.Member("alg"), jku: c.Member("jku"),
		thumbprint: c.Member("thumbprint"), source: c.Member("source"), verified: c.Member("verified"), reason: c.Member("reason")}
}

func newCardRef(c schemas.Check) cardRefChecks {
	return cardRefChecks{root: c, digest: c.Member("digest"), fingerprint: c.Member("fingerprint"), etag: c.Member("etag"),
		fetchedAt: c.Member("fetchedAt"), signer: newSigner(c.Member("signer"))}
}

func newWalkers(s *schemas.Schema) *walkers {
	r := s.Check()
	w := &walkers{schema: s, root: r,
		taskID: r.Member("taskId"), agentURL: r.Member("agentUrl"), cardURL: r.Member("cardUrl"),
		method: r.Member("method"), attempt: r.Member("attempt"), state: r.Member("state"), skillID: r.Member("skillId"),
		artifactID: r.Member("artifactId"), mediaTypes: r.Member("mediaTypes"), code: r.Member("code"), message: r.Member("message"),
		digest: r.Member("digest"), fingerprint: r.Member("fingerprint"), source: r.Member("source"),
		trigger: newTrigger(r.Member("trigger")), signer: newSigner(r.Member("signer")),
		status: r.Member("status"), etag: r.Member("etag"), fetchedAt: r.Member("fetchedAt"), latencyMs: r.Member("latencyMs"),
		fetches: r.Member("fetches"), since: r.Member("since"),
		reason: r.Member("reason"), detail: r.Member("detail"), attemptedAt: r.Member("attemptedAt"),
		pinned: newCardRef(r.Member("pinned")), live: newCardRef(r.Member("live")),
		findings: r.Member("findings"),
		verdict:  r.Member("verdict"),
		digests:  r.Member("digests"), window: r.Member("window"),
	}
	f := w.findings.Items()
	w.finding = findingChecks{root: f, rule: f.Member("rule"), severity: f.Member("severity"), path: f.Member("path"),
		before: f.Member("before"), after: f.Member("after"), message: f.Member("message"), skill: f.Member("skill"),
		scheme: f.Member("scheme"), scope: f.Member("scope"), extension: f.Member("extension"), touches: f.Member("touches")}
	w.action, w.posture, w.why = w.verdict.Member("action"), w.verdict.Member("posture"), w.verdict.Member("reason")
	d := w.digests.Items()
	w.seen = sightingChecks{root: d, digest: d.Member("digest"), count: d.Member("count"),
		firstSeen: d.Member("firstSeen"), lastSeen: d.Member("lastSeen")}
	return w
}

// conformsTyped reports whether d, as json.Marshal writes it, conforms to
// schema s, deciding from the Go values. false means "not decided here":
// the caller validates the JSON.
func conformsTyped(s *schemas.Schema, d Data) bool {
	w := checkTables()[s.Type]
	if w == nil || w.schema != s {
		return false // another version of the schema: the tree decides
	}
	switch d := d.(type) {
	case Request:
		return w.request(&d)
	case Status:
		return w.statusData(&d)
	case Artifact:
		return w.artifact(&d)
	case Error:
		return w.errorData(&d)
	case Pinned:
		return w.pinnedData(&d)
	case Observed:
		return w.observed(&d)
	case Unreachable:
		return w.unreachable(&d)
	case Drift:
		return w.drift(&d)
	case Inconsistent:
		return w.inconsistent(&d)
	}
	return false // Submitted (its card and scopes are open JSON): the tree decides
}

// members collects the member names of one object as json.Marshal writes
// them, and whether every value checked so far conforms.
type members struct {
	names [12]string
	n     int
	ok    bool
}

func (m *members) add(name string) bool {
	if m.n == len(m.names) {
		m.ok = false
		return false
	}
	m.names[m.n] = name
	m.n++
	return true
}

// str adds a string member.
func (m *members) str(name string, c schemas.Check, v string) {
	if m.add(name) && !c.String(v) {
		m.ok = false
	}
}

// optStr adds a string member written only when it is not "" (omitempty).
func (m *members) optStr(name string, c schemas.Check, v string) {
	if v != "" {
		m.str(name, c, v)
	}
}

func (m *members) integer(name string, c schemas.Check, v int64) {
	if m.add(name) && !c.Int(v) {
		m.ok = false
	}
}

func (m *members) boolean(name string, c schemas.Check) {
	if m.add(name) && !c.Bool() {
		m.ok = false
	}
}

// timestamp adds a time member as encoding/json writes it (RFC 3339 with
// nanoseconds; the caller has marshalled it, so it formats).
func (m *members) timestamp(name string, c schemas.Check, t time.Time) {
	if m.add(name) && !c.String(t.Format(time.RFC3339Nano)) {
		m.ok = false
	}
}

// sub adds an object member whose own walk reported ok.
func (m *members) sub(name string, ok bool) {
	if m.add(name) && !ok {
		m.ok = false
	}
}

// done applies the object's own keywords to the members collected.
func (m *members) done(c schemas.Check, value func(string) (string, bool)) bool {
	return m.ok && c.Object(m.names[:m.n], value)
}

func newMembers() members { return members{ok: true} }

func (w *walkers) request(d *Request) bool {
	m := newMembers()
	m.str("taskId", w.taskID, d.TaskID)
	m.str("agentUrl", w.agentURL, d.AgentURL)
	m.str("method", w.method, d.Method)
	m.integer("attempt", w.attempt, int64(d.Attempt))
	return m.done(w.root, nil)
}

func (w *walkers) statusData(d *Status) bool {
	m := newMembers()
	m.str("taskId", w.taskID, d.TaskID)
	m.str("agentUrl", w.agentURL, d.AgentURL)
	m.str("state", w.state, d.State)
	m.optStr("skillId", w.skillID, d.SkillID)
	return m.done(w.root, nil)
}

func (w *walkers) artifact(d *Artifact) bool {
	m := newMembers()
	m.str("taskId", w.taskID, d.TaskID)
	m.str("agentUrl", w.agentURL, d.AgentURL)
	m.str("artifactId", w.artifactID, d.ArtifactID)
	m.sub("mediaTypes", stringList(w.mediaTypes, d.MediaTypes))
	return m.done(w.root, nil)
}

// stringList checks a []string member: nil is JSON null.
func stringList(c schemas.Check, v []string) bool {
	if v == nil || !c.Array(len(v)) {
		return false
	}
	items := c.Items()
	for _, s := range v {
		if !items.String(s) {
			return false
		}
	}
	return true
}

func (w *walkers) errorData(d *Error) bool {
	m := newMembers()
	m.str("taskId", w.taskID, d.TaskID)
	m.str("agentUrl", w.agentURL, d.AgentURL)
	m.str("method", w.method, d.Method)
	m.integer("code", w.code, int64(d.Code))
	m.str("message", w.message, d.Message)
	return m.done(w.root, nil)
}

func (t *triggerChecks) check(v *Trigger) bool {
	m := newMembers()
	m.str("eventId", t.eventID, v.EventID)
	m.str("type", t.typ, v.Type)
	m.optStr("source", t.source, v.Source)
	return m.done(t.root, nil)
}

func (s *signerChecks) check(v *detector.Signature) bool {
	m := newMembers()
	m.str("kid", s.kid, v.KeyID)
	m.str("alg", s.alg, v.Alg)
	m.optStr("jku", s.jku, v.JKU)
	m.optStr("thumbprint", s.thumbprint, v.Thumbprint)
	m.optStr("source", s.source, v.Source)
	m.boolean("verified", s.verified)
	m.str("reason", s.reason, v.Reason)
	return m.done(s.root, nil)
}

func (w *walkers) pinnedData(d *Pinned) bool {
	m := newMembers()
	m.str("taskId", w.taskID, d.TaskID)
	m.str("agentUrl", w.agentURL, d.AgentURL)
	m.optStr("cardUrl", w.cardURL, d.CardURL)
	m.str("digest", w.digest, d.Digest)
	m.optStr("fingerprint", w.fingerprint, d.Fingerprint)
	m.str("source", w.source, d.Source)
	if d.Trigger != (Trigger{}) { // omitzero
		m.sub("trigger", w.trigger.check(&d.Trigger))
	}
	if d.Signer != nil {
		m.sub("signer", w.signer.check(d.Signer))
	}
	m.optStr("extended", w.root.Member("extended"), d.Extended)
	return m.done(w.root, func(name string) (string, bool) {
		if name == "source" {
			return d.Source, true
		}
		return "", false
	})
}

func (w *walkers) observed(d *Observed) bool {
	m := newMembers()
	m.str("agentUrl", w.agentURL, d.AgentURL)
	m.str("cardUrl", w.cardURL, d.CardURL)
	m.str("digest", w.digest, d.Digest)
	m.integer("status", w.status, int64(d.Status))
	m.optStr("etag", w.etag, d.ETag)
	m.timestamp("fetchedAt", w.fetchedAt, d.FetchedAt)
	m.integer("latencyMs", w.latencyMs, d.LatencyMs)
	if d.Fetches != 0 { // omitempty
		m.integer("fetches", w.fetches, int64(d.Fetches))
	}
	if !d.Since.IsZero() { // omitzero
		m.timestamp("since", w.since, d.Since)
	}
	return m.done(w.root, nil)
}

func (w *walkers) unreachable(d *Unreachable) bool {
	m := newMembers()
	m.str("agentUrl", w.agentURL, d.AgentURL)
	m.str("cardUrl", w.cardURL, d.CardURL)
	m.str("reason", w.reason, d.Reason)
	m.optStr("detail", w.detail, d.Detail)
	m.optStr("taskId", w.taskID, d.TaskID)
	if !d.AttemptedAt.IsZero() { // omitzero
		m.timestamp("attemptedAt", w.attemptedAt, d.AttemptedAt)
	}
	if d.Trigger != (Trigger{}) {
		m.sub("trigger", w.trigger.check(&d.Trigger))
	}
	return m.done(w.root, nil)
}

func (c *cardRefChecks) check(v *CardRef) bool {
	m := newMembers()
	m.str("digest", c.digest, v.Digest)
	m.optStr("fingerprint", c.fingerprint, v.Fingerprint)
	m.optStr("etag", c.etag, v.ETag)
	if !v.FetchedAt.IsZero() {
		m.timestamp("fetchedAt", c.fetchedAt, v.FetchedAt)
	}
	if v.Signer != nil {
		m.sub("signer", c.signer.check(v.Signer))
	}
	return m.done(c.root, nil)
}

func (f *findingChecks) check(v *detector.Finding) bool {
	m := newMembers()
	m.str("rule", f.rule, v.Rule)
	m.str("severity", f.severity, v.Severity.String())
	m.str("path", f.path, v.Path)
	// Any JSON value: what a before or after holds is not the schema's
	// to say (json.Marshal has written it; a schema that constrained it
	// would not be {}, and the tree would decide).
	m.sub("before", f.before.Any())
	m.sub("after", f.after.Any())
	m.str("message", f.message, v.Message)
	m.optStr("skill", f.skill, v.Skill)
	m.optStr("scheme", f.scheme, v.Scheme)
	m.optStr("scope", f.scope, v.Scope)
	m.optStr("extension", f.extension, v.Extension)
	m.boolean("touches", f.touches)
	return m.done(f.root, nil)
}

func (w *walkers) drift(d *Drift) bool {
	m := newMembers()
	m.str("taskId", w.taskID, d.TaskID)
	m.str("agentUrl", w.agentURL, d.AgentURL)
	m.str("cardUrl", w.cardURL, d.CardURL)
	m.sub("pinned", w.pinned.check(&d.Pinned))
	m.sub("live", w.live.check(&d.Live))
	ok := w.findings.Array(len(d.Findings)) // nil is written as []
	for i := 0; ok && i < len(d.Findings); i++ {
		ok = w.finding.check(&d.Findings[i])
	}
	m.sub("findings", ok)
	v := newMembers()
	v.str("action", w.action, string(d.Verdict.Action))
	v.str("posture", w.posture, string(d.Verdict.Posture))
	v.str("reason", w.why, d.Verdict.Reason)
	v.optStr("replanSkill", w.verdict.Member("replanSkill"), d.Verdict.ReplanSkill)
	m.sub("verdict", v.done(w.verdict, nil))
	m.sub("trigger", w.trigger.check(&d.Trigger))
	return m.done(w.root, nil)
}

func (w *walkers) inconsistent(d *Inconsistent) bool {
	m := newMembers()
	m.str("agentUrl", w.agentURL, d.AgentURL)
	m.str("cardUrl", w.cardURL, d.CardURL)
	ok := d.Digests != nil && w.digests.Array(len(d.Digests))
	for i := 0; ok && i < len(d.Digests); i++ {
		s := &d.Digests[i]
		v := newMembers()
		v.str("digest", w.seen.digest, s.Digest)
		v.integer("count", w.seen.count, int64(s.Count))
		v.timestamp("firstSeen", w.seen.firstSeen, s.FirstSeen)
		v.timestamp("lastSeen", w.seen.lastSeen, s.LastSeen)
		ok = v.done(w.seen.root, nil)
	}
	m.sub("digests", ok)
	m.str("window", w.window, time.Duration(d.Window).String())
	return m.done(w.root, nil)
}
