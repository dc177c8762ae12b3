package detector

// Card is one agent card normalised onto the A2A v1.0 shape, whatever generation
// (v0.1, v0.2, v0.3, v1.0 or a hybrid) it was served in. It is built by Parse and
// is read-only afterwards; it is safe for concurrent readers.
//
// Booleans follow the card's meaning: an absent capability is false. Lists keep
// nil for "not declared" and an empty non-nil slice for "declared empty" where
// the difference matters (skill modes fall back to the card defaults only when
// the skill declares none).
type Card struct {
	// Raw is the card exactly as served. Digests and evidence are computed from it.
	Raw []byte

	Name             string
	Description      string
	Version          string
	DocumentationURL string
	IconURL          string
	Provider         Provider

	// Shape is the generation the card was written in: "v0.1", "v0.2", "v0.3",
	// "v1.0" or "hybrid" (fields of more than one generation).
	Shape string

	// Interfaces keeps the card's order: the first is the preferred one. v0.3
	// cards contribute url+preferredTransport first, then additionalInterfaces
	// (an additional interface equal to the preferred one is not repeated).
	Interfaces []Interface

	Capabilities Capabilities

	DefaultInputModes  []string
	DefaultOutputModes []string

	// Skills are sorted by ID; Skill looks one up.
	Skills []Skill

	// SecuritySchemes are keyed by the card's scheme name.
	SecuritySchemes map[string]SecurityScheme
	// SecurityRequirements is the card-level requirement list (v0.3 "security",
	// v1.0 "securityRequirements"); each entry maps scheme name to scopes.
	SecurityRequirements []SecurityRequirement

	// HasSignatures reports a non-empty top-level "signatures" array.
	HasSignatures bool
	// Signatures are what verifying the card's signatures found, one per
	// entry of its "signatures" array, in order. Parse leaves them nil: the
	// detector does no I/O, so whoever verified the card sets them (on a
	// copy: a parsed Card is shared read-only). Nil on a signed card means
	// not verified: the signature rules then know only that it is signed.
	Signatures []Signature

	// Conformance lists the parts of the card that follow no known version's
	// schema (a wrong type, an unreadable entry, a duplicate skill id, no
	// identity). Parse reads around them instead of refusing the card; Diff
	// reports those the live card adds as card-nonconformant.
	Conformance []Nonconformance

	skillIndex map[string]int
	src        cardSource
}

// cardSource records where Parse found the parts of the card whose served
// location depends on the card's generation, so that finding paths resolve
// in the card as served (see servedPath).
type cardSource struct {
	requirements string // "/securityRequirements", "/security" or "/authentication"
	extendedCard string // "/capabilities/extendedAgentCard" or a v0.3 top-level flag
}

// interfaceSource is where an interface and its fields were served: a
// supportedInterfaces entry, the v0.3 top-level url, or an additionalInterfaces
// entry (whose protocol version is the card's top-level one).
type interfaceSource struct {
	ptr, url, binding, version, tenant string
}

// Nonconformance is one part of a card that follows no known version's
// schema: Path is a JSON pointer into the served card, Message says why.
type Nonconformance struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Provider is the organisation that publishes the agent.
type Provider struct {
	Organization string
	URL          string
}

// Interface is one endpoint of the agent (v1.0 AgentInterface).
type Interface struct {
	URL string
	// ProtocolBinding is upper-cased: "JSONRPC", "GRPC", "HTTP+JSON". v0.3
	// "transport" and the CLI's lower-case "jsonrpc" map onto it.
	ProtocolBinding string
	// ProtocolVersion is the interface's own version, else the card's top-level
	// protocolVersion, else "" (v0.1 cards carry none).
	ProtocolVersion string
	Tenant          string

	src interfaceSource
}

// Capabilities are the card's optional features.
type Capabilities struct {
	Streaming              bool
	PushNotifications      bool
	ExtendedAgentCard      bool // v0.3 supportsAuthenticatedExtendedCard, pre-release supportsExtendedAgentCard
	StateTransitionHistory bool // v0.3 only; gone in v1.0
	Extensions             []Extension
}

// Extension is one declared protocol extension, identified by URI.
type Extension struct {
	URI         string
	Description string
	Required    bool
	// Params is the canonical JSON (RFC 8785) of the extension's params, or "".
	Params string

	src string // served pointer of the extension object
}

// Skill is one declared skill.
type Skill struct {
	ID          string
	Name        string
	Description string
	Tags        []string
	Examples    []string
	// InputModes and OutputModes are as declared by the skill (nil when the skill
	// declares none and the card defaults apply); see Card.InputModes.
	InputModes           []string
	OutputModes          []string
	SecurityRequirements []SecurityRequirement
	// Index is the skill's position in the served skills array (for JSON pointers).
	Index int

	requirementsKey string // "securityRequirements" or "security", as served
}

// SecurityRequirement maps a scheme name to the scopes required of it. One
// requirement is satisfied when every scheme in it is; a list of requirements is
// satisfied when any one of them is.
type SecurityRequirement map[string][]string

// SecurityScheme is a normalised security scheme. Type is one of "apiKey",
// "http", "oauth2", "openIdConnect", "mutualTLS" (v0.1 authentication schemes
// map to the closest type, for example "Bearer" to http/bearer).
type SecurityScheme struct {
	Type              string
	Description       string
	Scheme            string // http: lower-cased auth scheme, e.g. "bearer", "basic"
	BearerFormat      string
	Name              string // apiKey: header, query or cookie name
	Location          string // apiKey: "header", "query" or "cookie"
	OpenIDConnectURL  string
	OAuth2MetadataURL string
	Flows             map[string]OAuthFlow // oauth2: flow name → flow

	src string // served pointer of the object holding the scheme's fields
}

// OAuthFlow is one OAuth 2.0 flow of a scheme.
type OAuthFlow struct {
	AuthorizationURL       string
	TokenURL               string
	RefreshURL             string
	DeviceAuthorizationURL string
	// Scopes maps scope name to its description.
	Scopes map[string]string

	src string // served pointer of the flow object
}

// Skill returns the skill with the given id.
func (c *Card) Skill(id string) (Skill, bool) {
	i, ok := c.skillIndex[id]
	if !ok {
		return Skill{}, false
	}
	return c.Skills[i], true
}

// InputModes returns the skill's effective input modes: its own when declared,
// else the card's defaults.
func (c *Card) InputModes(s Skill) []string {
	if s.InputModes != nil {
		return s.InputModes
	}
	return c.DefaultInputModes
}

// OutputModes returns the skill's effective output modes: its own when declared,
// else the card's defaults.
func (c *Card) OutputModes(s Skill) []string {
	if s.OutputModes != nil {
		return s.OutputModes
	}
	return c.DefaultOutputModes
}

// ProtocolVersions returns the distinct protocol versions the card declares, in
// interface order (the card's top-level version first when it has no interfaces).
func (c *Card) ProtocolVersions() []string {
	var out []string
	seen := map[string]bool{}
	for _, in := range c.Interfaces {
		if in.ProtocolVersion != "" && !seen[in.ProtocolVersion] {
			seen[in.ProtocolVersion] = true
			out = append(out, in.ProtocolVersion)
		}
	}
	return out
}

// URL returns the preferred interface URL, or "".
func (c *Card) URL() string {
	if len(c.Interfaces) == 0 {
		return ""
	}
	return c.Interfaces[0].URL
}
