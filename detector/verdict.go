package detector

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Evaluate diffs the pinned card against the live one, adds the task-level
// findings the caller observed, and judges them for one task (see Assess).
func Evaluate(pinned, live *Card, req Requirements, posture Posture, taskFindings ...Finding) ([]Finding, Verdict) {
	return Assess(append(Diff(pinned, live), taskFindings...), pinned, live, req, posture)
}

// Assess is the last step of Evaluate, for callers that change the findings
// first: it sorts them in place, sets each one's Touches, and judges them.
func Assess(findings []Finding, pinned, live *Card, req Requirements, posture Posture) ([]Finding, Verdict) {
	SortFindings(findings)
	for i := range findings {
		findings[i].Touches = Touches(findings[i], pinned, live, req)
	}
	return findings, Judge(findings, pinned, live, req, posture)
}

// EvaluateUnknown is Evaluate for a task pinned by a digest whose card body
// carddrift never saw: when the digests differ, one pinned-card-unknown
// finding stands for what changed, judged against the live card.
func EvaluateUnknown(pinnedDigest, liveDigest string, live *Card, req Requirements, posture Posture, taskFindings ...Finding) ([]Finding, Verdict) {
	all := append([]Finding(nil), taskFindings...)
	if pinnedDigest != liveDigest {
		all = append(all, newFinding(RulePinnedCardUnknown, "", Breaking, "", pinnedDigest, liveDigest,
			"before", pinnedDigest, "after", liveDigest))
	}
	return Assess(all, live, live, req, posture)
}

// Judge decides what a task should do about findings. Only findings that
// touch the task and are at least a warning matter (Verdict.Impacting).
// Without an impacting breaking finding the task continues; with one,
// FailClosed (also "") aborts, and Degrade re-plans an idempotent task whose
// skill the live card still offers (perhaps renamed: Verdict.ReplanSkill), and
// aborts otherwise.
func Judge(findings []Finding, pinned, live *Card, req Requirements, posture Posture) Verdict {
	if posture == "" {
		posture = FailClosed
	}
	v := Verdict{Posture: posture}
	var breaking, infoTouching []Finding
	for _, f := range findings {
		if !Touches(f, pinned, live, req) {
			continue
		}
		if f.Severity < Warning {
			infoTouching = append(infoTouching, f)
			continue
		}
		v.Impacting = append(v.Impacting, f)
		if f.Severity == Breaking {
			breaking = append(breaking, f)
		}
	}
	if len(breaking) == 0 {
		v.Action = Continue
		switch {
		case len(v.Impacting) > 0:
			v.Reason = "only warning-level drift touches this task: " + summarize(v.Impacting)
		case len(infoTouching) > 0:
			v.Reason = "only info-level drift touches this task: " + summarize(infoTouching)
		case len(findings) > 0:
			v.Reason = fmt.Sprintf("%d finding(s), none touches this task", len(findings))
		default:
			v.Reason = "no drift"
		}
		return v
	}
	if posture == FailClosed {
		v.Action = Abort
		v.Reason = "fail-closed: breaking drift touches this task: " + summarize(breaking) + "; re-negotiate against the live card"
		return v
	}
	_, offered := live.Skill(req.SkillID)
	renamed := ""
	if req.SkillID != "" && !offered {
		renamed = renamedTarget(v.Impacting, live, req.SkillID)
	}
	switch {
	case !req.Idempotent:
		v.Action = Abort
		v.Reason = "degrade: cannot re-plan a task that is not idempotent: " + summarize(breaking)
	case renamed != "":
		v.Action, v.ReplanSkill = Replan, renamed
		v.Reason = fmt.Sprintf("degrade: task is idempotent and skill %q is now offered as %q; re-plan onto it against the live card: %s", req.SkillID, renamed, summarize(breaking))
	case req.SkillID != "" && !offered:
		v.Action = Abort
		v.Reason = fmt.Sprintf("degrade: cannot re-plan: skill %q is no longer offered: %s", req.SkillID, summarize(breaking))
	default:
		v.Action = Replan
		if req.SkillID != "" {
			v.Reason = fmt.Sprintf("degrade: task is idempotent and skill %q is still offered; re-plan against the live card: %s", req.SkillID, summarize(breaking))
		} else {
			v.Reason = "degrade: task is idempotent; re-plan against the live card: " + summarize(breaking)
		}
	}
	return v
}

// renamedTarget is the new id of the task's skill that an impacting
// skill-renamed finding names and the live card offers, or "".
func renamedTarget(impacting []Finding, live *Card, skillID string) string {
	for _, f := range impacting {
		to, ok := f.After.(string)
		if f.Rule != RuleSkillRenamed || f.Skill != skillID || !ok || to == "" {
			continue
		}
		if _, offered := live.Skill(to); offered {
			return to
		}
	}
	return ""
}

// summarize lists the rule ids for a verdict's reason; signature-required
// comes with its message, which says why.
func summarize(fs []Finding) string {
	seen := map[string]bool{}
	var parts []string
	for _, f := range fs {
		if seen[f.Rule] {
			continue
		}
		seen[f.Rule] = true
		part := f.Rule
		if f.Rule == RuleSignatureRequired {
			part += " (" + f.Message + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// Touches reports whether a finding concerns what the task uses: its rule's
// Touch, or for an unknown rule whether it names no skill or the task's.
func Touches(f Finding, pinned, live *Card, req Requirements) bool {
	if pinned == nil {
		pinned = &Card{}
	}
	if live == nil {
		live = &Card{}
	}
	if r, ok := RuleByID(f.Rule); ok && r.Touches.valid() {
		return touches[r.Touches].decide(f, pinned, live, req)
	}
	return f.Skill == "" || f.Skill == req.SkillID
}

// Touch is what of a task's plan a rule's findings must concern to affect
// the task. The zero value is no declaration, which the registry audit refuses.
type Touch int

// Kinds of Touch: the finding affects a task when …
const (
	TouchNone               Touch = iota + 1 // never
	TouchAll                                 // always
	TouchSkill                               // its skill is the task's
	TouchStreaming                           // the task streams
	TouchPush                                // the task configures push notifications
	TouchInputModes                          // its skill is the task's and a type the task sends (any, when it names none) is no longer accepted
	TouchOutputModes                         // as TouchInputModes for the types the task expects
	TouchDefaultInputModes                   // the task's skill takes the card's default input modes and a type it sends is no longer covered
	TouchDefaultOutputModes                  // as TouchDefaultInputModes for output modes
	TouchScheme                              // the task authenticates with its scheme (usesScheme)
	TouchScope                               // the task requests its scope (requestsScope)
	TouchRequirements                        // it is about the requirements that apply to the task's skill
	TouchExtension                           // the task activates its extension (activates)
	TouchExtensionRequired                   // the task does not activate its extension, now required
	TouchExtendedCard                        // the task uses the authenticated extended card
)

// String returns the kind's kebab-case name, or "undeclared".
func (t Touch) String() string {
	if !t.valid() {
		return "undeclared"
	}
	return touches[t].name
}

func (t Touch) valid() bool { return t >= TouchNone && t <= TouchExtendedCard }

// touches holds each kind's name and decision; pinned and live are never nil.
var touches = [...]struct {
	name   string
	decide func(f Finding, pinned, live *Card, req Requirements) bool
}{
	TouchNone: {"none", func(Finding, *Card, *Card, Requirements) bool { return false }},
	TouchAll:  {"all", func(Finding, *Card, *Card, Requirements) bool { return true }},
	TouchSkill: {"skill", func(f Finding, _, _ *Card, req Requirements) bool {
		return f.Skill != "" && f.Skill == req.SkillID
	}},
	TouchStreaming: {"streaming", func(_ Finding, _, _ *Card, req Requirements) bool { return req.Streaming }},
	TouchPush:      {"push", func(_ Finding, _, _ *Card, req Requirements) bool { return req.PushNotifications }},
	TouchInputModes: {"input-modes", func(f Finding, pinned, live *Card, req Requirements) bool {
		return f.Skill == req.SkillID && modesTouch(req.SkillID, req.InputModes, pinned, live, (*Card).InputModes)
	}},
	TouchOutputModes: {"output-modes", func(f Finding, pinned, live *Card, req Requirements) bool {
		return f.Skill == req.SkillID && modesTouch(req.SkillID, req.OutputModes, pinned, live, (*Card).OutputModes)
	}},
	TouchDefaultInputModes: {"default-input-modes", func(_ Finding, pinned, live *Card, req Requirements) bool {
		return usesDefaults(pinned, req.SkillID, func(s Skill) bool { return s.InputModes == nil }) &&
			modesTouch(req.SkillID, req.InputModes, pinned, live, (*Card).InputModes)
	}},
	TouchDefaultOutputModes: {"default-output-modes", func(_ Finding, pinned, live *Card, req Requirements) bool {
		return usesDefaults(pinned, req.SkillID, func(s Skill) bool { return s.OutputModes == nil }) &&
			modesTouch(req.SkillID, req.OutputModes, pinned, live, (*Card).OutputModes)
	}},
	TouchScheme: {"scheme", func(f Finding, pinned, _ *Card, req Requirements) bool {
		return usesScheme(f.Scheme, pinned, req)
	}},
	TouchScope: {"scope", func(f Finding, pinned, _ *Card, req Requirements) bool {
		return requestsScope(f.Scheme, f.Scope, pinned, req)
	}},
	TouchRequirements: {"requirements", func(f Finding, pinned, live *Card, req Requirements) bool {
		if f.Skill != "" {
			return f.Skill == req.SkillID
		}
		// A skill with requirements of its own in either card has its own
		// finding (see checkSecurityRequirements).
		return !ownRequirements(pinned, req.SkillID) && !ownRequirements(live, req.SkillID)
	}},
	TouchExtension: {"extension", func(f Finding, pinned, _ *Card, req Requirements) bool {
		return f.Extension == "" || activates(f.Extension, pinned, req)
	}},
	TouchExtensionRequired: {"extension-required", func(f Finding, _, _ *Card, req Requirements) bool {
		return f.Extension == "" || !slices.Contains(req.Extensions, f.Extension)
	}},
	TouchExtendedCard: {"extended-card", func(_ Finding, _, _ *Card, req Requirements) bool { return req.ExtendedCard }},
}

// usesDefaults reports whether the task's skill (if known) takes the pinned
// card's default modes.
func usesDefaults(pinned *Card, skillID string, undeclared func(Skill) bool) bool {
	s, ok := skillByID(pinned, skillID)
	return !ok || undeclared(s)
}

// modesTouch: any mode change matters to a task that names no modes; else
// one the pinned card covered and the live card no longer does.
func modesTouch(skillID string, need []string, pinned, live *Card, modes func(*Card, Skill) []string) bool {
	if len(need) == 0 {
		return true
	}
	effective := func(c *Card) []string {
		if s, ok := skillByID(c, skillID); ok {
			return modes(c, s)
		}
		return modes(c, Skill{})
	}
	before, after := effective(pinned), effective(live)
	return slices.ContainsFunc(need, func(m string) bool {
		return (len(before) == 0 || Covers(before, m)) && len(after) > 0 && !Covers(after, m)
	})
}

// usesScheme: scheme is named in the task's requirements, else in a pinned
// requirement that applies to its skill.
func usesScheme(scheme string, pinned *Card, req Requirements) bool {
	if scheme == "" {
		return true
	}
	if len(req.Security) > 0 {
		return slices.ContainsFunc(req.Security, func(s string) bool { return strings.EqualFold(s, scheme) })
	}
	return slices.ContainsFunc(effectiveRequirements(pinned, req.SkillID), func(r SecurityRequirement) bool {
		_, ok := r[scheme]
		return ok
	})
}

// requestsScope: scope of scheme is in Requirements.Scopes when the client
// named its scopes, else in a pinned requirement that applies to its skill.
func requestsScope(scheme, scope string, pinned *Card, req Requirements) bool {
	if scope == "" {
		return usesScheme(scheme, pinned, req)
	}
	if req.Scopes != nil {
		for name, scopes := range req.Scopes {
			if (scheme == "" || strings.EqualFold(name, scheme)) && slices.Contains(scopes, scope) {
				return true
			}
		}
		return false
	}
	if !usesScheme(scheme, pinned, req) {
		return false
	}
	for _, r := range effectiveRequirements(pinned, req.SkillID) {
		for name, scopes := range r {
			if (scheme == "" || name == scheme) && slices.Contains(scopes, scope) {
				return true
			}
		}
	}
	return false
}

func ownRequirements(c *Card, skillID string) bool {
	s, ok := skillByID(c, skillID)
	return ok && len(s.SecurityRequirements) > 0
}

// activates: the task lists uri, or the pinned card requires it.
func activates(uri string, pinned *Card, req Requirements) bool {
	if slices.Contains(req.Extensions, uri) {
		return true
	}
	e, ok := extensionsByURI(pinned)[uri]
	return ok && e.Required
}

// CheckInputRequest returns an unmodeled-skill finding for an input request
// on a skill the pinned card does not declare.
func CheckInputRequest(pinned *Card, skillID string) (Finding, bool) {
	if skillID == "" {
		return Finding{}, false
	}
	if _, ok := pinned.Skill(skillID); ok {
		return Finding{}, false
	}
	f := newFinding(RuleUnmodeledSkill, "", Breaking, "/skills", nil, skillID, "skill", quote(skillID))
	f.Skill = skillID
	return f, true
}

// CheckArtifact returns an artifact-type-undeclared finding for each media
// type the pinned skill's output modes do not cover.
func CheckArtifact(pinned *Card, skillID, artifactID string, mediaTypes []string) []Finding {
	var modes []string
	path := "/defaultOutputModes"
	if s, ok := pinned.Skill(skillID); ok {
		modes = pinned.OutputModes(s)
		if s.OutputModes != nil {
			path = fmt.Sprintf("/skills/%d/outputModes", s.Index)
		}
	} else {
		modes = pinned.DefaultOutputModes
	}
	if len(modes) == 0 {
		return nil // nothing declared: nothing to hold the artifact against
	}
	var out []Finding
	for _, mt := range mediaTypes {
		if !Covers(modes, mt) {
			f := newFinding(RuleArtifactTypeUndeclared, "", Breaking, path, plainStrings(modes), mt, "artifact", quote(artifactID),
				"mediaType", quote(mt), "modes", quoteList(modes), "skill", quote(skillID))
			f.Skill = skillID
			out = append(out, f)
		}
	}
	return out
}

// Retry is a task's retry; ErrorAt is zero when no schema-class error
// preceded it.
type Retry struct {
	Method       string
	Attempt      int
	ErrorAt      time.Time
	ErrorCode    int
	PinnedDigest string
	SkillID      string
}

// CheckRetry returns a blind-retry finding when a retry (attempt > 1) follows
// a schema-class error on a pin that no longer matches the live card.
func CheckRetry(r Retry, liveDigest string) (Finding, bool) {
	if r.Attempt <= 1 || r.ErrorAt.IsZero() || liveDigest == "" || r.PinnedDigest == liveDigest {
		return Finding{}, false
	}
	f := newFinding(RuleBlindRetry, "", Breaking, "", r.PinnedDigest, liveDigest,
		"attempt", strconv.Itoa(r.Attempt), "method", quote(r.Method), "code", strconv.Itoa(r.ErrorCode))
	f.Skill = r.SkillID
	return f, true
}

// Posture is how a task reacts to breaking drift that touches it.
type Posture string

// Postures (see Judge).
const (
	FailClosed Posture = "fail-closed"
	Degrade    Posture = "degrade"
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

// Counts counts verdicts by action.
type Counts struct {
	Abort    int `json:"abort"`
	Replan   int `json:"replan"`
	Continue int `json:"continue"`
}

// Add counts one verdict's action.
func (c *Counts) Add(a Action) {
	switch a {
	case Abort:
		c.Abort++
	case Replan:
		c.Replan++
	case Continue:
		c.Continue++
	}
}

// Requirements is what a task needs of the agent, as the client planned it.
type Requirements struct {
	SkillID           string   `json:"skillId,omitempty"`
	Streaming         bool     `json:"streaming,omitempty"`
	PushNotifications bool     `json:"pushNotifications,omitempty"`
	InputModes        []string `json:"inputModes,omitempty"`
	OutputModes       []string `json:"outputModes,omitempty"`
	Security          []string `json:"security,omitempty"` // schemes the client authenticates with
	// Scopes maps a scheme name to the OAuth scopes requested of it. Nil: the
	// scopes of the pinned requirements that apply to the skill are assumed.
	Scopes       map[string][]string `json:"scopes,omitempty"`
	Extensions   []string            `json:"extensions,omitempty"` // URIs the client activates
	ExtendedCard bool                `json:"extendedCard,omitempty"`
	Posture      Posture             `json:"posture,omitempty"`
	Idempotent   bool                `json:"idempotent,omitempty"`
}

// Verdict is the task-scoped outcome of evaluating drift.
type Verdict struct {
	Action  Action  `json:"action"`
	Posture Posture `json:"posture"`
	Reason  string  `json:"reason"`
	// ReplanSkill is the new id of a renamed skill a replan goes onto.
	ReplanSkill string `json:"replanSkill,omitempty"`
	// Impacting are the findings that touch the task, in Diff order.
	Impacting []Finding `json:"-"`
}
