package detector

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Limits bound what Parse accepts (jcs.Limits); a zero field is its default.
type Limits = jcs.Limits

// DefaultLimits are the limits Parse applies.
var DefaultLimits = Limits{MaxBytes: jcs.DefaultMaxBytes, MaxDepth: jcs.DefaultMaxDepth}

// Parse is ParseLimits under DefaultLimits.
func Parse(raw []byte) (*Card, error) { return ParseLimits(raw, DefaultLimits) }

// ParseLimits reads an agent card of any generation (v0.1 to v1.0, hybrids,
// SDK shapes) onto the v1.0 shape; the Card keeps raw (not a copy). It refuses
// only bytes that are not a JSON object (the sentinels of errors.go) and lists
// in Card.Conformance what follows no known schema. It is lenient where the
// meaning is unambiguous: nulls are absent fields, "true"/"false" strings (any
// case) are booleans, a single media type string is a list of one (noted), the
// ts-proto oneof encoding ({"$case": …, "value": …}) reads like the v1.0 form,
// and in cards with v1.0 fields empty lists and strings mean unset (proto3).
func ParseLimits(raw []byte, lim Limits) (*Card, error) {
	v, err := jcs.Parse(raw, lim)
	if err != nil {
		return nil, err
	}
	if v.Kind != jcs.Object {
		return nil, &SyntaxError{Offset: 0, Detail: "top-level value is not an object", Err: ErrNotObject}
	}
	p := cardParser{card: &Card{Raw: raw}}
	p.parse(&v)
	c := p.card
	if c.Name == "" && c.URL() == "" {
		p.note("", "the card has no name and no interface URL")
	}
	return c, nil
}

// cardParser walks the JSON tree, noting in Card.Conformance what it cannot
// read.
type cardParser struct {
	card *Card

	v1, legacy, v01 bool // which generations' fields were seen
}

func (p *cardParser) note(ptr, reason string) {
	p.card.Conformance = append(p.card.Conformance, Nonconformance{Path: ptr, Message: reason})
}

func (p *cardParser) wrongType(ptr, want string, got *jcs.Value) {
	p.note(ptr, "want "+want+", got "+kindNames[got.Kind])
}

var kindNames = [...]string{jcs.Null: "null", jcs.False: "a boolean", jcs.True: "a boolean", jcs.Number: "a number",
	jcs.String: "a string", jcs.Array: "an array", jcs.Object: "an object"}

func present(v *jcs.Value, ok bool) bool { return ok && v.Kind != jcs.Null }

// member returns obj's member key when present and of kind k; a member of
// another kind is noted and read as absent.
func (p *cardParser) member(obj *jcs.Value, key, ptr string, k jcs.Kind, want string) *jcs.Value {
	v, ok := obj.Get(key)
	if !present(v, ok) {
		return nil
	}
	if v.Kind != k {
		p.wrongType(ptr+"/"+escapePointer(key), want, v)
		return nil
	}
	return v
}

func (p *cardParser) str(obj *jcs.Value, key, ptr string) string {
	if v := p.member(obj, key, ptr, jcs.String, "a string"); v != nil {
		return v.Str
	}
	return ""
}

func (p *cardParser) boolean(obj *jcs.Value, key, ptr string) bool {
	v, ok := obj.Get(key)
	if !present(v, ok) {
		return false
	}
	switch v.Kind {
	case jcs.True:
		return true
	case jcs.False:
		return false
	case jcs.String:
		switch strings.ToLower(v.Str) {
		case "true":
			return true
		case "false":
			return false
		}
	}
	p.wrongType(ptr+"/"+escapePointer(key), "a boolean", v)
	return false
}

// strs reads an array of strings: nil when absent, non-nil when present; a
// single string is a list of one (noted).
func (p *cardParser) strs(obj *jcs.Value, key, ptr string) []string {
	v, ok := obj.Get(key)
	if !present(v, ok) {
		return nil
	}
	ptr += "/" + escapePointer(key)
	switch v.Kind {
	case jcs.Array:
	case jcs.String:
		p.note(ptr, "want an array of strings, got a string (read as a list of one)")
		return []string{v.Str}
	default:
		p.wrongType(ptr, "an array of strings", v)
		return nil
	}
	return p.stringElems(v, ptr)
}

// stringElems returns the strings of arr; other elements are noted.
func (p *cardParser) stringElems(arr *jcs.Value, ptr string) []string {
	out := make([]string, 0, len(arr.Elems))
	for i := range arr.Elems {
		if arr.Elems[i].Kind != jcs.String {
			p.wrongType(ptr+"/"+strconv.Itoa(i), "a string", &arr.Elems[i])
			continue
		}
		out = append(out, arr.Elems[i].Str)
	}
	return out
}

func (p *cardParser) object(obj *jcs.Value, key, ptr string) *jcs.Value {
	return p.member(obj, key, ptr, jcs.Object, "an object")
}

func (p *cardParser) array(obj *jcs.Value, key, ptr string) *jcs.Value {
	return p.member(obj, key, ptr, jcs.Array, "an array")
}

// eachObject calls fn for every object element of arr; others are noted.
func (p *cardParser) eachObject(arr *jcs.Value, ptr string, fn func(i int, ptr string, e *jcs.Value)) {
	for i := range arr.Elems {
		e := &arr.Elems[i]
		eptr := ptr + "/" + strconv.Itoa(i)
		if e.Kind != jcs.Object {
			p.wrongType(eptr, "an object", e)
			continue
		}
		fn(i, eptr, e)
	}
}

func (p *cardParser) parse(root *jcs.Value) {
	c := p.card
	c.Name = p.str(root, "name", "")
	c.Description = p.str(root, "description", "")
	c.Version = p.str(root, "version", "")
	c.DocumentationURL = p.str(root, "documentationUrl", "")
	c.IconURL = p.str(root, "iconUrl", "")
	if prov := p.object(root, "provider", ""); prov != nil {
		c.Provider = Provider{
			Organization: p.str(prov, "organization", "/provider"),
			URL:          p.str(prov, "url", "/provider"),
		}
	}
	if sigs := p.array(root, "signatures", ""); sigs != nil {
		c.HasSignatures = len(sigs.Elems) > 0
	}

	topVersion := p.str(root, "protocolVersion", "")
	p.interfaces(root, topVersion)
	p.capabilities(root)
	c.DefaultInputModes = p.strs(root, "defaultInputModes", "")
	c.DefaultOutputModes = p.strs(root, "defaultOutputModes", "")
	p.skills(root)
	p.security(root)
	p.shape(topVersion)
	if p.v1 {
		p.proto3()
	}
}

// proto3 reads empty lists as unset in a card with v1.0 fields.
func (p *cardParser) proto3() {
	c := p.card
	c.DefaultInputModes = unsetIfEmpty(c.DefaultInputModes)
	c.DefaultOutputModes = unsetIfEmpty(c.DefaultOutputModes)
	c.SecurityRequirements = unsetIfEmpty(c.SecurityRequirements)
	c.Capabilities.Extensions = unsetIfEmpty(c.Capabilities.Extensions)
	for i := range c.Skills {
		s := &c.Skills[i]
		s.InputModes = unsetIfEmpty(s.InputModes)
		s.OutputModes = unsetIfEmpty(s.OutputModes)
		s.Tags = unsetIfEmpty(s.Tags)
		s.Examples = unsetIfEmpty(s.Examples)
		s.SecurityRequirements = unsetIfEmpty(s.SecurityRequirements)
	}
}

func unsetIfEmpty[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return s
}

// normBinding maps transport and binding spellings onto the v1.0 names.
func normBinding(s string) string {
	switch s = strings.ToUpper(strings.TrimSpace(s)); s {
	case "JSONRPC", "JSON-RPC", "JSONRPC2", "JSON-RPC 2.0":
		return "JSONRPC"
	case "HTTP+JSON", "HTTP_JSON", "REST", "HTTP":
		return "HTTP+JSON"
	}
	return s
}

func (p *cardParser) interfaces(root *jcs.Value, topVersion string) {
	c := p.card
	// Only v1.0 entries carry their own version and tenant; a v0.3
	// additional interface equal to the preferred one is not repeated.
	read := func(arr *jcs.Value, at string, v1 bool, bindingKeys ...string) {
		p.eachObject(arr, at, func(_ int, ptr string, e *jcs.Value) {
			binding, bindingKey := p.firstStr(e, ptr, bindingKeys...)
			in := Interface{
				URL: p.str(e, "url", ptr), ProtocolBinding: normBinding(binding), ProtocolVersion: topVersion,
				src: interfaceSource{ptr: ptr, url: ptr + "/url", binding: ptr + "/" + bindingKey, version: "/protocolVersion"},
			}
			if v1 {
				if v := p.str(e, "protocolVersion", ptr); v != "" {
					in.ProtocolVersion, in.src.version = v, ptr+"/protocolVersion"
				}
				in.Tenant, in.src.tenant = p.str(e, "tenant", ptr), ptr+"/tenant"
			} else if len(c.Interfaces) > 0 && c.Interfaces[0].URL == in.URL && c.Interfaces[0].ProtocolBinding == in.ProtocolBinding {
				return
			}
			c.Interfaces = append(c.Interfaces, in)
		})
	}
	if si := p.array(root, "supportedInterfaces", ""); si != nil {
		p.v1 = true
		read(si, "/supportedInterfaces", true, "protocolBinding", "transport")
	}
	url := p.str(root, "url", "")
	preferred := p.str(root, "preferredTransport", "")
	additional := p.array(root, "additionalInterfaces", "")
	if url != "" || preferred != "" || additional != nil {
		p.legacy = true
	}
	main := Interface{
		URL: url, ProtocolBinding: normBinding(cmp.Or(preferred, "JSONRPC")), ProtocolVersion: topVersion,
		src: interfaceSource{ptr: "/url", url: "/url", binding: "/preferredTransport", version: "/protocolVersion"},
	}
	if len(c.Interfaces) > 0 {
		// A hybrid card: supportedInterfaces is authoritative; a top-level url
		// that it does not list is kept after them.
		if url != "" && !slices.ContainsFunc(c.Interfaces, func(in Interface) bool { return in.URL == url }) {
			c.Interfaces = append(c.Interfaces, main)
		}
		return
	}
	if url != "" {
		c.Interfaces = append(c.Interfaces, main)
	}
	if additional != nil {
		read(additional, "/additionalInterfaces", false, "transport", "protocolBinding")
	}
}

// firstStr reads the first of keys that is set, and the key (the last when
// none is).
func (p *cardParser) firstStr(obj *jcs.Value, ptr string, keys ...string) (value, key string) {
	for _, key = range keys {
		if value = p.str(obj, key, ptr); value != "" {
			break
		}
	}
	return value, key
}

func (p *cardParser) capabilities(root *jcs.Value) {
	c := p.card
	caps := p.object(root, "capabilities", "")
	if caps != nil {
		const ptr = "/capabilities"
		c.Capabilities.Streaming = p.boolean(caps, "streaming", ptr)
		c.Capabilities.PushNotifications = p.boolean(caps, "pushNotifications", ptr)
		c.Capabilities.StateTransitionHistory = p.boolean(caps, "stateTransitionHistory", ptr)
		if v, ok := caps.Get("extendedAgentCard"); present(v, ok) {
			p.v1 = true
			c.Capabilities.ExtendedAgentCard = p.boolean(caps, "extendedAgentCard", ptr)
			c.src.extendedCard = ptr + "/extendedAgentCard"
		}
		if exts := p.array(caps, "extensions", ptr); exts != nil {
			c.Capabilities.Extensions = []Extension{}
			p.eachObject(exts, ptr+"/extensions", func(_ int, eptr string, e *jcs.Value) {
				ext := Extension{
					URI:         p.str(e, "uri", eptr),
					Description: p.str(e, "description", eptr),
					Required:    p.boolean(e, "required", eptr),
					src:         eptr,
				}
				if ext.URI == "" {
					p.note(eptr, "an extension needs a non-empty uri (the extension is not compared)")
					return
				}
				if params, ok := e.Get("params"); present(params, ok) {
					ext.Params = string(jcs.Append(nil, params))
				}
				c.Capabilities.Extensions = append(c.Capabilities.Extensions, ext)
			})
		}
	}
	// v0.3 and pre-release spellings of the extended-card flag.
	for _, key := range []string{"supportsAuthenticatedExtendedCard", "supportsExtendedAgentCard"} {
		if v, ok := root.Get(key); present(v, ok) {
			p.legacy = true
			c.src.extendedCard = cmp.Or(c.src.extendedCard, "/"+key)
			c.Capabilities.ExtendedAgentCard = p.boolean(root, key, "") || c.Capabilities.ExtendedAgentCard
		}
	}
}

func (p *cardParser) skills(root *jcs.Value) {
	c := p.card
	arr := p.array(root, "skills", "")
	if arr == nil {
		return
	}
	c.Skills = make([]Skill, 0, len(arr.Elems))
	p.eachObject(arr, "/skills", func(i int, ptr string, e *jcs.Value) {
		s := Skill{
			ID:          p.str(e, "id", ptr),
			Name:        p.str(e, "name", ptr),
			Description: p.str(e, "description", ptr),
			Tags:        p.strs(e, "tags", ptr),
			Examples:    p.strs(e, "examples", ptr),
			InputModes:  p.strs(e, "inputModes", ptr),
			OutputModes: p.strs(e, "outputModes", ptr),
			Index:       i,
		}
		if s.ID == "" {
			p.note(ptr, "a skill needs a non-empty string id (the skill is not compared)")
			return
		}
		s.SecurityRequirements, s.requirementsKey = p.securityRequirements(e, ptr)
		c.Skills = append(c.Skills, s)
	})
	sort.SliceStable(c.Skills, func(a, b int) bool { return c.Skills[a].ID < c.Skills[b].ID })
	out := c.Skills[:0]
	for i, s := range c.Skills {
		if i > 0 && s.ID == c.Skills[i-1].ID {
			p.note("/skills/"+strconv.Itoa(s.Index)+"/id", "duplicate skill id "+strconv.Quote(s.ID)+" (the first is compared)")
			continue
		}
		out = append(out, s)
	}
	c.Skills = out
	c.buildSkillIndex()
}

func (c *Card) buildSkillIndex() {
	c.skillIndex = make(map[string]int, len(c.Skills))
	for i, s := range c.Skills {
		c.skillIndex[s.ID] = i
	}
}

// requirements reads v0.3 [{"name": ["scope"]}], v1.0
// [{"schemes": {"name": {"list": ["scope"]}}}] or [{"schemes": {"name": ["scope"]}}].
func (p *cardParser) requirements(v *jcs.Value, ptr string) []SecurityRequirement {
	if v.Kind != jcs.Array {
		p.wrongType(ptr, "an array", v)
		return nil
	}
	out := make([]SecurityRequirement, 0, len(v.Elems))
	p.eachObject(v, ptr, func(_ int, eptr string, e *jcs.Value) {
		body := e
		if s, ok := e.Get("schemes"); ok && len(e.Members) == 1 && s.Kind == jcs.Object {
			body, eptr = s, eptr+"/schemes"
		}
		req := SecurityRequirement{}
		for j := range body.Members {
			m := &body.Members[j]
			mptr := eptr + "/" + escapePointer(m.Key)
			scopes := &m.Value
			if l, ok := scopes.Get("list"); ok {
				scopes, mptr = l, mptr+"/list"
			} else if scopes.Kind == jcs.Object {
				scopes = &jcs.Value{} // no list: no scopes
			}
			req[m.Key] = []string{}
			switch scopes.Kind {
			case jcs.Array:
				req[m.Key] = p.stringElems(scopes, mptr)
			case jcs.Null:
			default:
				p.wrongType(mptr, "an array of scopes", scopes)
			}
		}
		out = append(out, req)
	})
	return out
}

// securityRequirements reads v1.0 "securityRequirements", else v0.3
// "security", of the card or a skill, and the key read ("" for neither).
func (p *cardParser) securityRequirements(obj *jcs.Value, ptr string) ([]SecurityRequirement, string) {
	if reqs, ok := obj.Get("securityRequirements"); present(reqs, ok) {
		p.v1 = true
		return p.requirements(reqs, ptr+"/securityRequirements"), "securityRequirements"
	}
	if reqs, ok := obj.Get("security"); present(reqs, ok) {
		p.legacy = true
		return p.requirements(reqs, ptr+"/security"), "security"
	}
	return nil, ""
}

func (p *cardParser) security(root *jcs.Value) {
	c := p.card
	if schemes := p.object(root, "securitySchemes", ""); schemes != nil {
		c.SecuritySchemes = make(map[string]SecurityScheme, len(schemes.Members))
		for i := range schemes.Members {
			m := &schemes.Members[i]
			ptr := "/securitySchemes/" + escapePointer(m.Key)
			if m.Value.Kind != jcs.Object {
				p.wrongType(ptr, "an object", &m.Value)
				continue
			}
			c.SecuritySchemes[m.Key] = p.scheme(&m.Value, ptr)
		}
	}
	reqs, key := p.securityRequirements(root, "")
	if key != "" {
		c.SecurityRequirements = reqs
		c.src.requirements = "/" + key
	}
	if auth, ok := root.Get("authentication"); ok {
		p.v01 = true
		if auth.Kind == jcs.Object {
			c.src.requirements = cmp.Or(c.src.requirements, "/authentication")
			p.authentication(auth)
		} else if auth.Kind != jcs.Null {
			p.wrongType("/authentication", "an object", auth)
		}
	}
}

// schemeWrappers are the v1.0 oneof members of a security scheme.
var schemeWrappers = []struct{ key, typ string }{
	{"apiKeySecurityScheme", "apiKey"},
	{"httpAuthSecurityScheme", "http"},
	{"oauth2SecurityScheme", "oauth2"},
	{"openIdConnectSecurityScheme", "openIdConnect"},
	{"mtlsSecurityScheme", "mutualTLS"},
}

// schemeTypes maps the lower-cased v0.3 "type" onto its v1.0 spelling.
var schemeTypes = map[string]string{
	"apikey": "apiKey", "http": "http", "oauth2": "oauth2", "openidconnect": "openIdConnect",
	"mutualtls": "mutualTLS", "mtls": "mutualTLS",
}

// oneof reads the ts-proto encoding of a oneof field of v (perhaps nil):
// {"<field>": {"$case": "<member>", "value": {…}}}.
func oneof(v *jcs.Value, field string) (member string, value *jcs.Value, ptr string, ok bool) {
	if v == nil {
		return "", nil, "", false
	}
	o, found := v.Get(field)
	if !found || o.Kind != jcs.Object {
		return "", nil, "", false
	}
	c, found := o.Get("$case")
	if !found || c.Kind != jcs.String {
		return "", nil, "", false
	}
	val, found := o.Get("value")
	if !found {
		return "", nil, "", false
	}
	return c.Str, val, "/" + escapePointer(field) + "/value", true
}

// scheme normalises one security scheme: v0.3 {"type": …}, v1.0's oneof
// wrappers {"httpAuthSecurityScheme": {…}}, or the ts-proto oneof
// {"scheme": {"$case": "httpAuthSecurityScheme", "value": {…}}}.
func (p *cardParser) scheme(v *jcs.Value, ptr string) SecurityScheme {
	body, typ, bodyPtr := v, "", ptr
	if member, val, sub, ok := oneof(v, "scheme"); ok {
		for _, w := range schemeWrappers {
			if member == w.key {
				typ = w.typ
			}
		}
		p.v1 = true
		if typ == "" {
			p.note(ptr+"/scheme/$case", "unknown security scheme kind "+strconv.Quote(member))
		}
		if val.Kind != jcs.Object {
			p.wrongType(ptr+sub, "an object", val)
			return SecurityScheme{Type: typ, src: ptr}
		}
		body, bodyPtr = val, ptr+sub
	}
	if typ == "" && body == v {
		for _, w := range schemeWrappers {
			if inner, ok := v.Get(w.key); ok {
				p.v1 = true
				if inner.Kind != jcs.Object {
					p.wrongType(ptr+"/"+w.key, "an object", inner)
					return SecurityScheme{Type: w.typ, src: ptr}
				}
				body, typ, bodyPtr = inner, w.typ, ptr+"/"+w.key
				break
			}
		}
	}
	if typ == "" && body == v {
		p.legacy = true
		typ = p.str(v, "type", ptr)
		if t, ok := schemeTypes[strings.ToLower(typ)]; ok {
			typ = t
		} else if typ == "" {
			p.note(ptr, "security scheme has no type")
		}
	}
	s := SecurityScheme{
		Type:              typ,
		Description:       p.str(body, "description", bodyPtr),
		Scheme:            strings.ToLower(p.str(body, "scheme", bodyPtr)),
		BearerFormat:      p.str(body, "bearerFormat", bodyPtr),
		Name:              p.str(body, "name", bodyPtr),
		Location:          p.str(body, "location", bodyPtr),
		OpenIDConnectURL:  p.str(body, "openIdConnectUrl", bodyPtr),
		OAuth2MetadataURL: p.str(body, "oauth2MetadataUrl", bodyPtr),
		src:               bodyPtr,
	}
	if s.Location == "" {
		s.Location = p.str(body, "in", bodyPtr)
	}
	s.Location = strings.ToLower(s.Location)
	flows := p.object(body, "flows", bodyPtr)
	if member, val, sub, ok := oneof(flows, "flow"); ok {
		// ts-proto: "flows": {"flow": {"$case": "clientCredentials", "value": {…}}}
		s.Flows = map[string]OAuthFlow{}
		if f, ok := p.flow(val, bodyPtr+"/flows"+sub); ok {
			s.Flows[member] = f
		}
	} else if flows != nil {
		s.Flows = make(map[string]OAuthFlow, len(flows.Members))
		for i := range flows.Members {
			m := &flows.Members[i]
			if f, ok := p.flow(&m.Value, bodyPtr+"/flows/"+escapePointer(m.Key)); ok {
				s.Flows[m.Key] = f
			}
		}
	}
	return s
}

func (p *cardParser) flow(v *jcs.Value, ptr string) (OAuthFlow, bool) {
	if v.Kind != jcs.Object {
		p.wrongType(ptr, "an object", v)
		return OAuthFlow{}, false
	}
	f := OAuthFlow{
		AuthorizationURL:       p.str(v, "authorizationUrl", ptr),
		TokenURL:               p.str(v, "tokenUrl", ptr),
		RefreshURL:             p.str(v, "refreshUrl", ptr),
		DeviceAuthorizationURL: p.str(v, "deviceAuthorizationUrl", ptr),
		src:                    ptr,
	}
	if scopes := p.object(v, "scopes", ptr); scopes != nil {
		f.Scopes = make(map[string]string, len(scopes.Members))
		for j := range scopes.Members {
			sm := &scopes.Members[j]
			if sm.Value.Kind == jcs.String {
				f.Scopes[sm.Key] = sm.Value.Str
			} else {
				f.Scopes[sm.Key] = ""
			}
		}
	}
	return f, true
}

// authSchemes maps lower-cased v0.1 authentication scheme names onto
// security schemes; those of no Type declare none.
var authSchemes = map[string]SecurityScheme{
	"public": {}, "none": {}, "anonymous": {}, "": {},
	"bearer": {Type: "http", Scheme: "bearer"}, "basic": {Type: "http", Scheme: "basic"},
	"oauth2": {Type: "oauth2"}, "oauth": {Type: "oauth2"},
	"openidconnect": {Type: "openIdConnect"}, "oidc": {Type: "openIdConnect"},
	"apikey": {Type: "apiKey"}, "api_key": {Type: "apiKey"},
	"mtls": {Type: "mutualTLS"}, "mutualtls": {Type: "mutualTLS"},
}

// authentication maps v0.1 "authentication": {"schemes": [...]} onto one
// security scheme per name and a requirement list of any one of them.
func (p *cardParser) authentication(auth *jcs.Value) {
	c := p.card
	names := p.strs(auth, "schemes", "/authentication")
	for _, name := range names {
		s, known := authSchemes[strings.ToLower(name)]
		switch {
		case known && s.Type == "":
			continue // public
		case !known:
			s = SecurityScheme{Type: "http", Scheme: strings.ToLower(name)}
		}
		s.src = "/authentication/schemes"
		if c.SecuritySchemes == nil {
			c.SecuritySchemes = map[string]SecurityScheme{}
		}
		if _, dup := c.SecuritySchemes[name]; dup {
			continue
		}
		c.SecuritySchemes[name] = s
		if c.SecurityRequirements == nil {
			c.SecurityRequirements = []SecurityRequirement{}
		}
		c.SecurityRequirements = append(c.SecurityRequirements, SecurityRequirement{name: {}})
	}
}

func (p *cardParser) shape(topVersion string) {
	c := p.card
	line := ""
	for _, s := range SupportedVersions {
		if topVersion == s || strings.HasPrefix(topVersion, s+".") {
			line = s
		}
	}
	switch {
	case p.v1 && (p.legacy || p.v01 || topVersion != ""):
		c.Shape = "hybrid"
	case p.v1:
		c.Shape = "v1.0"
	case line == "1.0":
		c.Shape = "hybrid" // a v1.0 version on a card without v1.0 fields
	case p.v01 || line == "0.1":
		c.Shape = "v0.1"
	case line == "0.2":
		c.Shape = "v0.2"
	default:
		c.Shape = "v0.3"
	}
}

// escapePointer escapes one RFC 6901 reference token.
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
