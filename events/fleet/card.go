package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/carddrift/carddrift/detector"
)

// object is a JSON object as encoding/json decodes it (numbers as
// json.Number, so that they are written back as they were read).
type object = map[string]any

// editor changes one card the way its generation spells things.
type editor struct {
	v   object
	gen Generation
}

func newEditor(raw []byte, gen Generation) (*editor, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v object
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("fleet: card is not a JSON object: %w", err)
	}
	return &editor{v: v, gen: gen}, nil
}

func (e *editor) bytes() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(e.v) // a tree decoded from JSON encodes
	return b.Bytes()
}

func (e *editor) clone() *editor {
	c, _ := newEditor(e.bytes(), e.gen) // what bytes writes decodes
	return c
}

func (e *editor) parsed() (*detector.Card, error) {
	c, err := detector.Parse(e.bytes())
	if err != nil {
		return nil, fmt.Errorf("fleet: edited card does not parse: %w", err)
	}
	return c, nil
}

// objects returns the objects among a JSON array's elements.
func objects(arr any) []object {
	var out []object
	for _, x := range sliceOf(arr) {
		if o, ok := x.(object); ok {
			out = append(out, o)
		}
	}
	return out
}

func sliceOf(v any) []any {
	s, _ := v.([]any)
	return s
}

func str(o object, key string) string {
	s, _ := o[key].(string)
	return s
}

func has(o object, key string) bool {
	_, ok := o[key]
	return ok
}

func (e *editor) skillIDs() []string {
	var ids []string
	for _, sk := range objects(e.v["skills"]) {
		if id := str(sk, "id"); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// skill returns the skill object with the given id, or nil.
func (e *editor) skill(id string) object {
	for _, sk := range objects(e.v["skills"]) {
		if str(sk, "id") == id {
			return sk
		}
	}
	return nil
}

// addSkill appends a skill; its modes are the card defaults.
func (e *editor) addSkill(id, name, description string, tags ...string) {
	e.v["skills"] = append(sliceOf(e.v["skills"]), object{"id": id, "name": name, "description": description, "tags": tags})
}

func (e *editor) removeSkill(id string) {
	if s := sliceOf(e.v["skills"]); s != nil {
		e.v["skills"] = slices.DeleteFunc(s, func(x any) bool {
			sk, _ := x.(object)
			return str(sk, "id") == id
		})
	}
}

// ensureSkills adds generic skills until the card has at least n.
func (e *editor) ensureSkills(n int) {
	for _, x := range []struct{ id, name, desc, tag string }{
		{"faq", "Answer FAQs", "Answers frequently asked questions about this agent's service.", "support"},
		{"status-report", "Status Report", "Reports the status of the agent's recent work.", "status"},
	} {
		if len(e.skillIDs()) >= n {
			return
		}
		if e.skill(x.id) == nil {
			e.addSkill(x.id, x.name, x.desc, x.tag)
		}
	}
}

func (e *editor) setCapability(name string, on bool) {
	caps, ok := e.v["capabilities"].(object)
	if !ok {
		caps = object{}
		e.v["capabilities"] = caps
	}
	caps[name] = on
}

// setDescription replaces the description of the card, or of skill id.
func (e *editor) setDescription(card, id, skill string) {
	e.v["description"] = card
	if sk := e.skill(id); sk != nil {
		sk["description"] = skill
	}
}

func (e *editor) version() string { return str(e.v, "version") }

// bumpVersion: "1.2.0" → "1.2.1", "beta" → "beta.1", none → "1.0.1".
func (e *editor) bumpVersion() {
	v := e.version()
	i := strings.LastIndexByte(v, '.')
	switch n, err := strconv.Atoi(v[i+1:]); {
	case v == "":
		v = "1.0.1"
	case err != nil || n < 0:
		v += ".1"
	default:
		v = v[:i+1] + strconv.Itoa(n+1)
	}
	e.v["version"] = v
}

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
	ss, _ := e.v["securitySchemes"].(object)
	for _, name := range slices.Sorted(maps.Keys(ss)) {
		s, _ := ss[name].(object)
		if has(s, "type") {
			return false
		}
		for k := range s {
			if strings.HasSuffix(k, "SecurityScheme") {
				return true
			}
		}
	}
	return e.gen == GenV10 || has(e.v, "supportedInterfaces")
}

// scheme builds a security scheme in the card's spelling.
func (e *editor) scheme(k schemeKind) object {
	wrapped := e.wrappedSchemes()
	switch k {
	case schemeAPIKey:
		if wrapped {
			return object{"apiKeySecurityScheme": object{"location": "header", "name": "X-API-Key"}}
		}
		return object{"type": "apiKey", "in": "header", "name": "X-API-Key"}
	case schemeOAuth2:
		flows := object{"clientCredentials": object{
			"tokenUrl": "https://auth.example.com/oauth2/token",
			"scopes":   object{"agent:invoke": "Invoke the agent"}}}
		if wrapped {
			return object{"oauth2SecurityScheme": object{"flows": flows}}
		}
		return object{"type": "oauth2", "flows": flows}
	default:
		if wrapped {
			return object{"httpAuthSecurityScheme": object{"scheme": "Bearer", "bearerFormat": "JWT"}}
		}
		return object{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
	}
}

// setSecurity makes name (of kind k) the card's only security scheme and
// requirement, and drops per-skill requirements.
func (e *editor) setSecurity(name string, k schemeKind, scopes ...string) {
	scopes = append([]string{}, scopes...) // [] rather than null
	key := "security"
	if has(e.v, "securityRequirements") || !has(e.v, "security") && e.gen == GenV10 {
		key = "securityRequirements"
	}
	e.v["securitySchemes"] = object{name: e.scheme(k)}
	req := object{name: scopes}
	if key == "securityRequirements" {
		req = object{"schemes": object{name: object{"list": scopes}}}
		delete(e.v, "security")
	}
	e.v[key] = []any{req}
	for _, sk := range objects(e.v["skills"]) {
		delete(sk, "security")
		delete(sk, "securityRequirements")
	}
}

// interfaces returns the card and each of its additional or supported
// interfaces.
func interfaces(card object) []object {
	return slices.Concat([]object{card}, objects(card["additionalInterfaces"]), objects(card["supportedInterfaces"]))
}

// protocolVersions returns the card and its supported interfaces.
func (e *editor) protocolVersions() []object {
	var out []object
	for _, o := range append([]object{e.v}, objects(e.v["supportedInterfaces"])...) {
		if _, ok := o["protocolVersion"].(string); ok {
			out = append(out, o)
		}
	}
	return out
}

// ensureProtocolVersion declares a protocol version on a card that has none,
// in the card's generation.
func (e *editor) ensureProtocolVersion() {
	if len(e.protocolVersions()) > 0 {
		return
	}
	if ifs := objects(e.v["supportedInterfaces"]); len(ifs) > 0 {
		for _, o := range ifs {
			o["protocolVersion"] = "1.0"
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
	e.v["protocolVersion"] = v
}

// shiftProtocolVersion drops a protocol version line the card declared:
// 0.2 → 0.3.0, 0.3 → 1.0, 1.0 alone → 0.3.
func (e *editor) shiftProtocolVersion() {
	holders := e.protocolVersions()
	allV1 := !slices.ContainsFunc(holders, func(o object) bool {
		v := str(o, "protocolVersion")
		return !strings.HasPrefix(v, "1.") && v != "1"
	})
	for _, o := range holders {
		switch v := str(o, "protocolVersion"); {
		case allV1 && v == "1.0":
			o["protocolVersion"] = "0.3"
		case allV1:
			o["protocolVersion"] = "0.3.0"
		case strings.HasPrefix(v, "0.1") || strings.HasPrefix(v, "0.2"):
			o["protocolVersion"] = "0.3.0"
		case strings.HasPrefix(v, "0.3"):
			o["protocolVersion"] = "1.0"
		}
	}
}
