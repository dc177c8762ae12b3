package fleet

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/jcs"
)

// editor changes one card the way its generation spells things. Scenarios
// derive every card version from an agent's base card through it.
type editor struct {
	v   jcs.Value
	gen Generation
}

func newEditor(raw []byte, gen Generation) (*editor, error) {
	v, err := parseTree(raw)
	if err != nil {
		return nil, err
	}
	return &editor{v: v, gen: gen}, nil
}

// clone returns an independent copy.
func (e *editor) clone() *editor { return &editor{v: cloneTree(e.v), gen: e.gen} }

// bytes returns the card as served.
func (e *editor) bytes() []byte { return encodeTree(&e.v) }

// parsed returns the card as the detector sees it.
func (e *editor) parsed() (*detector.Card, error) {
	c, err := detector.Parse(e.bytes())
	if err != nil {
		return nil, fmt.Errorf("fleet: edited card does not parse: %w", err)
	}
	return c, nil
}

// skills returns the served skills array, or nil.
func (e *editor) skills() *jcs.Value {
	s := member(&e.v, "skills")
	if s == nil || s.Kind != jcs.Array {
		return nil
	}
	return s
}

// skillIDs returns the skill ids in served order.
func (e *editor) skillIDs() []string {
	s := e.skills()
	if s == nil {
		return nil
	}
	var ids []string
	for i := range s.Elems {
		if id := strMember(&s.Elems[i], "id"); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// skill returns the served skill object with the given id, or nil.
func (e *editor) skill(id string) *jcs.Value {
	s := e.skills()
	if s == nil {
		return nil
	}
	for i := range s.Elems {
		if strMember(&s.Elems[i], "id") == id {
			return &s.Elems[i]
		}
	}
	return nil
}

// addSkill appends a skill; its modes are the card defaults.
func (e *editor) addSkill(id, name, description string, tags ...string) {
	sk := jobj("id", jstr(id), "name", jstr(name), "description", jstr(description), "tags", jstrs(tags...))
	if s := e.skills(); s != nil {
		s.Elems = append(s.Elems, sk)
		return
	}
	setMember(&e.v, "skills", jarr(sk))
}

// removeSkill deletes the skill with the given id.
func (e *editor) removeSkill(id string) {
	if s := e.skills(); s != nil {
		s.Elems = slices.DeleteFunc(s.Elems, func(v jcs.Value) bool { return strMember(&v, "id") == id })
	}
}

// setSkills replaces all skills.
func (e *editor) setSkills(skills ...jcs.Value) { setMember(&e.v, "skills", jarr(skills...)) }

// ensureSkills adds generic skills until the card has at least n, so that a
// scenario can change one skill and watch a task on another.
func (e *editor) ensureSkills(n int) {
	extra := []struct{ id, name, desc, tag string }{
		{"faq", "Answer FAQs", "Answers frequently asked questions about this agent's service.", "support"},
		{"status-report", "Status Report", "Reports the status of the agent's recent work.", "status"},
	}
	for _, x := range extra {
		if len(e.skillIDs()) >= n {
			return
		}
		if e.skill(x.id) == nil {
			e.addSkill(x.id, x.name, x.desc, x.tag)
		}
	}
}

// setCapability sets capabilities[name], creating capabilities if needed.
func (e *editor) setCapability(name string, on bool) {
	setMember(objectMember(&e.v, "capabilities"), name, jbool(on))
}

// setSkillModes sets a skill's own inputModes or outputModes (key).
func (e *editor) setSkillModes(id, key string, modes ...string) error {
	sk := e.skill(id)
	if sk == nil {
		return fmt.Errorf("fleet: card has no skill %q", id)
	}
	setMember(sk, key, jstrs(modes...))
	return nil
}

// setDescription replaces the card's description, and a skill's when id is
// not empty.
func (e *editor) setDescription(card, id, skill string) {
	setMember(&e.v, "description", jstr(card))
	if sk := e.skill(id); sk != nil {
		setMember(sk, "description", jstr(skill))
	}
}

// version returns the card's version, or "".
func (e *editor) version() string { return strMember(&e.v, "version") }

// bumpVersion increments the last numeric component of the card's version
// ("1.2.0" → "1.2.1"), appending ".1" to a non-numeric one and setting
// "1.0.1" when there is none.
func (e *editor) bumpVersion() {
	setMember(&e.v, "version", jstr(nextVersion(e.version())))
}

func nextVersion(v string) string {
	if v == "" {
		return "1.0.1"
	}
	i := strings.LastIndexByte(v, '.')
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n < 0 {
		return v + ".1"
	}
	return v[:i+1] + strconv.Itoa(n+1)
}

// Security.

// schemeKind is a security scheme a scenario installs.
type schemeKind int

const (
	schemeBearer schemeKind = iota
	schemeAPIKey
	schemeOAuth2
)

// wrappedSchemes reports whether the card spells security schemes the v1.0
// way ({"httpAuthSecurityScheme": {…}}) rather than with a "type".
func (e *editor) wrappedSchemes() bool {
	if ss := member(&e.v, "securitySchemes"); ss != nil && ss.Kind == jcs.Object {
		for i := range ss.Members {
			s := &ss.Members[i].Value
			if member(s, "type") != nil {
				return false
			}
			for _, m := range s.Members {
				if strings.HasSuffix(m.Key, "SecurityScheme") {
					return true
				}
			}
		}
	}
	return e.gen == GenV10 || member(&e.v, "supportedInterfaces") != nil
}

// requirementsKey is the member the card lists its security requirements in.
func (e *editor) requirementsKey() string {
	switch {
	case member(&e.v, "securityRequirements") != nil:
		return "securityRequirements"
	case member(&e.v, "security") != nil:
		return "security"
	case e.gen == GenV10:
		return "securityRequirements"
	}
	return "security"
}

// scheme builds a security scheme in the card's spelling.
func (e *editor) scheme(k schemeKind) jcs.Value {
	wrapped := e.wrappedSchemes()
	switch k {
	case schemeAPIKey:
		if wrapped {
			return jobj("apiKeySecurityScheme", jobj("location", jstr("header"), "name", jstr("X-API-Key")))
		}
		return jobj("type", jstr("apiKey"), "in", jstr("header"), "name", jstr("X-API-Key"))
	case schemeOAuth2:
		flows := jobj("clientCredentials", jobj(
			"tokenUrl", jstr("https://auth.example.com/oauth2/token"),
			"scopes", jobj("agent:invoke", jstr("Invoke the agent"))))
		if wrapped {
			return jobj("oauth2SecurityScheme", jobj("flows", flows))
		}
		return jobj("type", jstr("oauth2"), "flows", flows)
	default:
		if wrapped {
			return jobj("httpAuthSecurityScheme", jobj("scheme", jstr("Bearer"), "bearerFormat", jstr("JWT")))
		}
		return jobj("type", jstr("http"), "scheme", jstr("bearer"), "bearerFormat", jstr("JWT"))
	}
}

// setSecurity makes name (of kind k, requiring scopes) the card's only
// security scheme and requirement, and drops per-skill requirements that
// named the schemes it replaces.
func (e *editor) setSecurity(name string, k schemeKind, scopes ...string) {
	key := e.requirementsKey()
	setMember(&e.v, "securitySchemes", jobj(name, e.scheme(k)))
	var req jcs.Value
	if key == "securityRequirements" {
		req = jobj("schemes", jobj(name, jobj("list", jstrs(scopes...))))
	} else {
		req = jobj(name, jstrs(scopes...))
	}
	if key == "securityRequirements" {
		deleteMember(&e.v, "security")
	}
	setMember(&e.v, key, jarr(req))
	if s := e.skills(); s != nil {
		for i := range s.Elems {
			deleteMember(&s.Elems[i], "security")
			deleteMember(&s.Elems[i], "securityRequirements")
		}
	}
}

// Interfaces and protocol versions.

// moveInterfaces replaces every interface URL equal to from with to.
func (e *editor) moveInterfaces(from, to string) int {
	n := 0
	for _, u := range interfaceURLs(&e.v) {
		if u.Str == from {
			u.Str = to
			n++
		}
	}
	return n
}

// protocolVersionFields returns every protocolVersion string of the card:
// top-level and per supported interface.
func (e *editor) protocolVersionFields() []*jcs.Value {
	var out []*jcs.Value
	if v := member(&e.v, "protocolVersion"); v != nil && v.Kind == jcs.String {
		out = append(out, v)
	}
	if arr := member(&e.v, "supportedInterfaces"); arr != nil && arr.Kind == jcs.Array {
		for i := range arr.Elems {
			if v := member(&arr.Elems[i], "protocolVersion"); v != nil && v.Kind == jcs.String {
				out = append(out, v)
			}
		}
	}
	return out
}

// ensureProtocolVersion declares a protocol version on a card that has none:
// per interface on cards with supportedInterfaces, else at the top level,
// in the card's generation.
func (e *editor) ensureProtocolVersion() {
	if len(e.protocolVersionFields()) > 0 {
		return
	}
	if arr := member(&e.v, "supportedInterfaces"); arr != nil && arr.Kind == jcs.Array && len(arr.Elems) > 0 {
		for i := range arr.Elems {
			setMember(&arr.Elems[i], "protocolVersion", jstr("1.0"))
		}
		return
	}
	v := "0.3.0"
	switch e.gen {
	case GenV02:
		v = "0.2.6"
	case GenV10:
		v = "1.0"
	}
	setMember(&e.v, "protocolVersion", jstr(v))
}

// shiftProtocolVersion changes what the card offers so that at least one
// protocol version line it declared is no longer offered: every line below
// 1.0 moves up one (0.2 → 0.3.0, 0.3 → 1.0), and a card that offers only 1.0
// rolls back to 0.3.
func (e *editor) shiftProtocolVersion() {
	fields := e.protocolVersionFields()
	allV1 := true
	for _, f := range fields {
		if !strings.HasPrefix(f.Str, "1.") && f.Str != "1" {
			allV1 = false
		}
	}
	for _, f := range fields {
		switch {
		case allV1 && f.Str == "1.0":
			f.Str = "0.3"
		case allV1:
			f.Str = "0.3.0"
		case strings.HasPrefix(f.Str, "0.1") || strings.HasPrefix(f.Str, "0.2"):
			f.Str = "0.3.0"
		case strings.HasPrefix(f.Str, "0.3"):
			f.Str = "1.0"
		}
	}
}
