package detector

import (
	"sort"
	"strconv"
	"strings"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Limits bound what Parse accepts. The zero value means the defaults.
type Limits struct {
	MaxBytes int // default 1 MiB
	MaxDepth int // default 64
}

// DefaultLimits are the limits Parse applies.
var DefaultLimits = Limits{MaxBytes: 1 << 20, MaxDepth: 64}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	return l
}

// Parse reads an agent card of any supported generation from raw bytes, under
// DefaultLimits. See ParseLimits.
func Parse(raw []byte) (*Card, error) { return ParseLimits(raw, DefaultLimits) }

// ParseLimits reads an agent card of any supported generation (v0.1, v0.2,
// v0.3, v1.0, hybrids) from raw bytes and normalises it onto the v1.0 shape.
// The returned Card keeps raw (not a copy: the caller must not modify it).
//
// Errors, testable with errors.Is / errors.As:
//   - ErrTooLarge, ErrNotJSON, ErrInvalidUTF8, ErrDuplicateKey, ErrTooDeep,
//     ErrNotObject: the bytes are not a single well-formed JSON object within
//     the limits (a *SyntaxError gives the offset);
//   - ErrInvalidField (*FieldError): a known field has the wrong type, for
//     example a skill without an id or capabilities that are not an object;
//   - ErrUnsupportedVersion (*UnsupportedVersionError): a protocol version
//     outside SupportedVersions;
//   - ErrMissingIdentity: no name and no interface URL.
//
// Lenient where real cards are sloppy and the meaning is unambiguous: explicit
// nulls are absent fields, and booleans written as the strings "true"/"false"
// (any case, as Python serialisers emit them) are booleans.
func ParseLimits(raw []byte, lim Limits) (*Card, error) {
	lim = lim.withDefaults()
	v, err := jcs.Parse(raw, jcs.Limits{MaxBytes: lim.MaxBytes, MaxDepth: lim.MaxDepth})
	if err != nil {
		return nil, err
	}
	if v.Kind != jcs.Object {
		return nil, &SyntaxError{Offset: 0, Detail: "top-level value is not an object", Err: ErrNotObject}
	}
	p := cardParser{card: &Card{Raw: raw}}
	p.parse(&v)
	if p.err != nil {
		return nil, p.err
	}
	c := p.card
	if c.Name == "" && c.URL() == "" {
		return nil, ErrMissingIdentity
	}
	return c, nil
}

// cardParser walks the JSON tree; the first error sticks and later reads are
// no-ops, which keeps the walk free of error plumbing.
type cardParser struct {
	card *Card
	err  error

	v1, legacy bool // which generations' fields were seen
	v01        bool // v0.1 "authentication"
}

func (p *cardParser) fail(ptr, reason string) {
	if p.err == nil {
		p.err = &FieldError{Pointer: ptr, Reason: reason}
	}
}

func present(v *jcs.Value, ok bool) bool { return ok && v.Kind != jcs.Null }

func (p *cardParser) str(obj *jcs.Value, key, ptr string) string {
	v, ok := obj.Get(key)
	if !present(v, ok) {
		return ""
	}
	if v.Kind != jcs.String {
		p.fail(ptr+"/"+escapePointer(key), "want a string")
		return ""
	}
	return v.Str
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
	p.fail(ptr+"/"+escapePointer(key), "want a boolean")
	return false
}

// strs reads an array of strings; nil when absent or null, non-nil when present.
func (p *cardParser) strs(obj *jcs.Value, key, ptr string) []string {
	v, ok := obj.Get(key)
	if !present(v, ok) {
		return nil
	}
	ptr += "/" + escapePointer(key)
	if v.Kind != jcs.Array {
		p.fail(ptr, "want an array of strings")
		return nil
	}
	out := make([]string, 0, len(v.Elems))
	for i := range v.Elems {
		if v.Elems[i].Kind != jcs.String {
			p.fail(ptr+"/"+strconv.Itoa(i), "want a string")
			return nil
		}
		out = append(out, v.Elems[i].Str)
	}
	return out
}

func (p *cardParser) object(obj *jcs.Value, key, ptr string) *jcs.Value {
	v, ok := obj.Get(key)
	if !present(v, ok) {
		return nil
	}
	if v.Kind != jcs.Object {
		p.fail(ptr+"/"+escapePointer(key), "want an object")
		return nil
	}
	return v
}

func (p *cardParser) array(obj *jcs.Value, key, ptr string) *jcs.Value {
	v, ok := obj.Get(key)
	if !present(v, ok) {
		return nil
	}
	if v.Kind != jcs.Array {
		p.fail(ptr+"/"+escapePointer(key), "want an array")
		return nil
	}
	return v
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

	topVersion := ""
	if v, ok := root.Get("protocolVersion"); present(v, ok) {
		if v.Kind != jcs.String {
			p.fail("/protocolVersion", "want a string")
		} else {
			topVersion = v.Str
			p.checkVersion(topVersion, "/protocolVersion")
		}
	}

	p.interfaces(root, topVersion)
	p.capabilities(root)
	c.DefaultInputModes = p.strs(root, "defaultInputModes", "")
	c.DefaultOutputModes = p.strs(root, "defaultOutputModes", "")
	p.skills(root)
	p.security(root)
	p.shape(topVersion)
}

func (p *cardParser) checkVersion(v, ptr string) {
	for _, s := range SupportedVersions {
		if v == s || strings.HasPrefix(v, s+".") {
			return
		}
	}
	if p.err == nil {
		p.err = &UnsupportedVersionError{Version: v, Pointer: ptr, Supported: SupportedVersions}
	}
}

// normBinding maps transport and binding spellings onto the v1.0 names.
func normBinding(s string) string {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "JSONRPC", "JSON-RPC", "JSONRPC2", "JSON-RPC 2.0":
		return "JSONRPC"
	case "GRPC":
		return "GRPC"
	case "HTTP+JSON", "HTTP_JSON", "REST", "HTTP":
		return "HTTP+JSON"
	}
	return strings.ToUpper(strings.TrimSpace(s))
}

func (p *cardParser) interfaces(root *jcs.Value, topVersion string) {
	c := p.card
	if si := p.array(root, "supportedInterfaces", ""); si != nil {
		p.v1 = true
		for i := range si.Elems {
			e := &si.Elems[i]
			ptr := "/supportedInterfaces/" + strconv.Itoa(i)
			if e.Kind != jcs.Object {
				p.fail(ptr, "want an object")
				return
			}
			binding := p.str(e, "protocolBinding", ptr)
			if binding == "" {
				binding = p.str(e, "transport", ptr)
			}
			in := Interface{
				URL:             p.str(e, "url", ptr),
				ProtocolBinding: normBinding(binding),
				ProtocolVersion: p.str(e, "protocolVersion", ptr),
				Tenant:          p.str(e, "tenant", ptr),
			}
			if in.ProtocolVersion != "" {
				p.checkVersion(in.ProtocolVersion, ptr+"/protocolVersion")
			} else {
				in.ProtocolVersion = topVersion
			}
			c.Interfaces = append(c.Interfaces, in)
		}
	}
	url := p.str(root, "url", "")
	preferred := p.str(root, "preferredTransport", "")
	additional := p.array(root, "additionalInterfaces", "")
	if url != "" || preferred != "" || additional != nil {
		p.legacy = true
	}
	if len(c.Interfaces) > 0 {
		// A hybrid card: supportedInterfaces is authoritative; a top-level url
		// that it does not list is kept after them.
		if url != "" && !hasURL(c.Interfaces, url) {
			c.Interfaces = append(c.Interfaces, Interface{URL: url, ProtocolBinding: normBinding(orDefault(preferred, "JSONRPC")), ProtocolVersion: topVersion})
		}
		return
	}
	if url != "" {
		c.Interfaces = append(c.Interfaces, Interface{URL: url, ProtocolBinding: normBinding(orDefault(preferred, "JSONRPC")), ProtocolVersion: topVersion})
	}
	if additional == nil {
		return
	}
	for i := range additional.Elems {
		e := &additional.Elems[i]
		ptr := "/additionalInterfaces/" + strconv.Itoa(i)
		if e.Kind != jcs.Object {
			p.fail(ptr, "want an object")
			return
		}
		binding := p.str(e, "transport", ptr)
		if binding == "" {
			binding = p.str(e, "protocolBinding", ptr)
		}
		in := Interface{URL: p.str(e, "url", ptr), ProtocolBinding: normBinding(binding), ProtocolVersion: topVersion}
		if len(c.Interfaces) > 0 && c.Interfaces[0].URL == in.URL && c.Interfaces[0].ProtocolBinding == in.ProtocolBinding {
			continue
		}
		c.Interfaces = append(c.Interfaces, in)
	}
}

func hasURL(ins []Interface, url string) bool {
	for _, in := range ins {
		if in.URL == url {
			return true
		}
	}
	return false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
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
		}
		if exts := p.array(caps, "extensions", ptr); exts != nil {
			for i := range exts.Elems {
				e := &exts.Elems[i]
				eptr := ptr + "/extensions/" + strconv.Itoa(i)
				if e.Kind != jcs.Object {
					p.fail(eptr, "want an object")
					return
				}
				ext := Extension{
					URI:         p.str(e, "uri", eptr),
					Description: p.str(e, "description", eptr),
					Required:    p.boolean(e, "required", eptr),
				}
				if params, ok := e.Get("params"); present(params, ok) {
					ext.Params = string(jcs.Append(nil, params))
				}
				c.Capabilities.Extensions = append(c.Capabilities.Extensions, ext)
			}
		}
	}
	// v0.3 and pre-release spellings of the extended-card flag.
	for _, key := range []string{"supportsAuthenticatedExtendedCard", "supportsExtendedAgentCard"} {
		if v, ok := root.Get(key); present(v, ok) {
			p.legacy = true
			if p.boolean(root, key, "") {
				c.Capabilities.ExtendedAgentCard = true
			}
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
	for i := range arr.Elems {
		e := &arr.Elems[i]
		ptr := "/skills/" + strconv.Itoa(i)
		if e.Kind != jcs.Object {
			p.fail(ptr, "want an object")
			return
		}
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
		if s.ID == "" && p.err == nil {
			p.fail(ptr+"/id", "a skill needs a non-empty string id")
		}
		if reqs, ok := e.Get("securityRequirements"); present(reqs, ok) {
			p.v1 = true
			s.SecurityRequirements = p.requirements(reqs, ptr+"/securityRequirements")
		} else if reqs, ok := e.Get("security"); present(reqs, ok) {
			p.legacy = true
			s.SecurityRequirements = p.requirements(reqs, ptr+"/security")
		}
		c.Skills = append(c.Skills, s)
	}
	sort.SliceStable(c.Skills, func(a, b int) bool { return c.Skills[a].ID < c.Skills[b].ID })
	for i := 1; i < len(c.Skills); i++ {
		if c.Skills[i].ID == c.Skills[i-1].ID {
			p.fail("/skills/"+strconv.Itoa(c.Skills[i].Index)+"/id", "duplicate skill id "+strconv.Quote(c.Skills[i].ID))
			return
		}
	}
	c.buildSkillIndex()
}

// buildSkillIndex builds the id → position index over the sorted skills.
func (c *Card) buildSkillIndex() {
	c.skillIndex = make(map[string]int, len(c.Skills))
	for i, s := range c.Skills {
		c.skillIndex[s.ID] = i
	}
}

// requirements reads a security requirement list in either generation's shape:
// v0.3 [{"name": ["scope"]}] or v1.0 [{"schemes": {"name": {"list": ["scope"]}}}]
// (also the unwrapped v1.0 variant [{"schemes": {"name": ["scope"]}}]).
func (p *cardParser) requirements(v *jcs.Value, ptr string) []SecurityRequirement {
	if v.Kind != jcs.Array {
		p.fail(ptr, "want an array")
		return nil
	}
	out := make([]SecurityRequirement, 0, len(v.Elems))
	for i := range v.Elems {
		e := &v.Elems[i]
		eptr := ptr + "/" + strconv.Itoa(i)
		if e.Kind != jcs.Object {
			p.fail(eptr, "want an object")
			return nil
		}
		body := e
		if s, ok := e.Get("schemes"); ok && len(e.Members) == 1 && s.Kind == jcs.Object {
			body, eptr = s, eptr+"/schemes"
		}
		req := SecurityRequirement{}
		for j := range body.Members {
			m := &body.Members[j]
			mptr := eptr + "/" + escapePointer(m.Key)
			scopes := &m.Value
			if scopes.Kind == jcs.Object {
				l, ok := scopes.Get("list")
				if !ok {
					req[m.Key] = []string{}
					continue
				}
				scopes, mptr = l, mptr+"/list"
			}
			if scopes.Kind == jcs.Null {
				req[m.Key] = []string{}
				continue
			}
			if scopes.Kind != jcs.Array {
				p.fail(mptr, "want an array of scopes")
				return nil
			}
			list := make([]string, 0, len(scopes.Elems))
			for k := range scopes.Elems {
				if scopes.Elems[k].Kind != jcs.String {
					p.fail(mptr+"/"+strconv.Itoa(k), "want a string")
					return nil
				}
				list = append(list, scopes.Elems[k].Str)
			}
			req[m.Key] = list
		}
		out = append(out, req)
	}
	return out
}

func (p *cardParser) security(root *jcs.Value) {
	c := p.card
	if schemes := p.object(root, "securitySchemes", ""); schemes != nil {
		c.SecuritySchemes = make(map[string]SecurityScheme, len(schemes.Members))
		for i := range schemes.Members {
			m := &schemes.Members[i]
			ptr := "/securitySchemes/" + escapePointer(m.Key)
			if m.Value.Kind != jcs.Object {
				p.fail(ptr, "want an object")
				return
			}
			c.SecuritySchemes[m.Key] = p.scheme(&m.Value, ptr)
		}
	}
	if reqs, ok := root.Get("securityRequirements"); present(reqs, ok) {
		p.v1 = true
		c.SecurityRequirements = p.requirements(reqs, "/securityRequirements")
	} else if reqs, ok := root.Get("security"); present(reqs, ok) {
		p.legacy = true
		c.SecurityRequirements = p.requirements(reqs, "/security")
	}
	if auth, ok := root.Get("authentication"); ok {
		p.v01 = true
		if auth.Kind == jcs.Object {
			p.authentication(auth)
		} else if auth.Kind != jcs.Null {
			p.fail("/authentication", "want an object")
		}
	}
}

// scheme normalises one security scheme: v0.3 {"type": …} or v1.0's oneof
// wrappers {"httpAuthSecurityScheme": {…}}.
func (p *cardParser) scheme(v *jcs.Value, ptr string) SecurityScheme {
	wrappers := []struct{ key, typ string }{
		{"apiKeySecurityScheme", "apiKey"},
		{"httpAuthSecurityScheme", "http"},
		{"oauth2SecurityScheme", "oauth2"},
		{"openIdConnectSecurityScheme", "openIdConnect"},
		{"mtlsSecurityScheme", "mutualTLS"},
	}
	body, typ := v, ""
	for _, w := range wrappers {
		if inner, ok := v.Get(w.key); ok {
			p.v1 = true
			if inner.Kind != jcs.Object {
				p.fail(ptr+"/"+w.key, "want an object")
				return SecurityScheme{}
			}
			body, typ, ptr = inner, w.typ, ptr+"/"+w.key
			break
		}
	}
	if typ == "" {
		p.legacy = true
		typ = p.str(v, "type", ptr)
		switch strings.ToLower(typ) {
		case "apikey":
			typ = "apiKey"
		case "http":
			typ = "http"
		case "oauth2":
			typ = "oauth2"
		case "openidconnect":
			typ = "openIdConnect"
		case "mutualtls", "mtls":
			typ = "mutualTLS"
		case "":
			p.fail(ptr, "security scheme has no type")
		}
	}
	s := SecurityScheme{
		Type:              typ,
		Description:       p.str(body, "description", ptr),
		Scheme:            strings.ToLower(p.str(body, "scheme", ptr)),
		BearerFormat:      p.str(body, "bearerFormat", ptr),
		Name:              p.str(body, "name", ptr),
		Location:          p.str(body, "location", ptr),
		OpenIDConnectURL:  p.str(body, "openIdConnectUrl", ptr),
		OAuth2MetadataURL: p.str(body, "oauth2MetadataUrl", ptr),
	}
	if s.Location == "" {
		s.Location = p.str(body, "in", ptr)
	}
	if flows := p.object(body, "flows", ptr); flows != nil {
		s.Flows = make(map[string]OAuthFlow, len(flows.Members))
		for i := range flows.Members {
			m := &flows.Members[i]
			fptr := ptr + "/flows/" + escapePointer(m.Key)
			if m.Value.Kind != jcs.Object {
				p.fail(fptr, "want an object")
				return s
			}
			f := OAuthFlow{
				AuthorizationURL:       p.str(&m.Value, "authorizationUrl", fptr),
				TokenURL:               p.str(&m.Value, "tokenUrl", fptr),
				RefreshURL:             p.str(&m.Value, "refreshUrl", fptr),
				DeviceAuthorizationURL: p.str(&m.Value, "deviceAuthorizationUrl", fptr),
			}
			if scopes := p.object(&m.Value, "scopes", fptr); scopes != nil {
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
			s.Flows[m.Key] = f
		}
	}
	return s
}

// authentication maps a v0.1 "authentication": {"schemes": [...]} onto
// security schemes (one per named scheme) and requirements (any one of them).
// "public", "none" and "anonymous" declare no scheme.
func (p *cardParser) authentication(auth *jcs.Value) {
	c := p.card
	names := p.strs(auth, "schemes", "/authentication")
	for _, name := range names {
		var s SecurityScheme
		switch strings.ToLower(name) {
		case "public", "none", "anonymous", "":
			continue
		case "bearer":
			s = SecurityScheme{Type: "http", Scheme: "bearer"}
		case "basic":
			s = SecurityScheme{Type: "http", Scheme: "basic"}
		case "oauth2", "oauth":
			s = SecurityScheme{Type: "oauth2"}
		case "openidconnect", "oidc":
			s = SecurityScheme{Type: "openIdConnect"}
		case "apikey", "api_key":
			s = SecurityScheme{Type: "apiKey"}
		case "mtls", "mutualtls":
			s = SecurityScheme{Type: "mutualTLS"}
		default:
			s = SecurityScheme{Type: "http", Scheme: strings.ToLower(name)}
		}
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

// escapePointer escapes one JSON-pointer reference token (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
