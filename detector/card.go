package detector

import "time"

// Card is one agent card normalised onto the A2A v1.0 shape, whatever
// generation it was served in; read-only after Parse. Lists keep nil for "not
// declared" and an empty slice for "declared empty" where it matters (skill
// modes fall back to the card defaults only when the skill declares none).
type Card struct {
	// Raw is the card exactly as served.
	Raw []byte

	Name             string
	Description      string
	Version          string
	DocumentationURL string
	IconURL          string
	Provider         Provider

	// Shape is "v0.1", "v0.2", "v0.3", "v1.0" or "hybrid".
	Shape string

	// Interfaces keeps the card's order: the first is the preferred one.
	Interfaces []Interface

	Capabilities Capabilities

	DefaultInputModes  []string
	DefaultOutputModes []string

	// Skills are sorted by ID; Skill looks one up.
	Skills []Skill

	SecuritySchemes      map[string]SecurityScheme
	SecurityRequirements []SecurityRequirement

	// HasSignatures reports a non-empty top-level "signatures" array.
	HasSignatures bool
	// Signatures are what verifying the card's signatures found, one per
	// entry. Parse leaves them nil; whoever verified the card sets them (on
	// a copy). Nil on a signed card means not verified.
	Signatures []Signature

	// Conformance lists the parts of the card that follow no known schema.
	Conformance []Nonconformance

	skillIndex map[string]int
	src        cardSource
}

// cardSource records where Parse found parts whose served location depends
// on the generation (see servedPath).
type cardSource struct {
	requirements string // "/securityRequirements", "/security" or "/authentication"
	extendedCard string // "/capabilities/extendedAgentCard" or a v0.3 top-level flag
}

// interfaceSource is where an interface and its fields were served.
type interfaceSource struct {
	ptr, url, binding, version, tenant string
}

// Nonconformance is one part of a card that follows no known schema: Path
// points into the served card, Message says why.
type Nonconformance struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

type Provider struct {
	Organization string
	URL          string
}

// Interface is one endpoint of the agent (v1.0 AgentInterface).
type Interface struct {
	URL             string
	ProtocolBinding string // "JSONRPC", "GRPC", "HTTP+JSON"
	// ProtocolVersion is the interface's own, else the card's top-level one.
	ProtocolVersion string
	Tenant          string

	src interfaceSource
}

type Capabilities struct {
	Streaming              bool
	PushNotifications      bool
	ExtendedAgentCard      bool // v0.3 supportsAuthenticatedExtendedCard, pre-release supportsExtendedAgentCard
	StateTransitionHistory bool // v0.3 only; gone in v1.0
	Extensions             []Extension
}

type Extension struct {
	URI         string
	Description string
	Required    bool
	Params      string // canonical JSON of the params, or ""

	src string // served pointer of the extension object
}

type Skill struct {
	ID          string
	Name        string
	Description string
	Tags        []string
	Examples    []string
	// InputModes and OutputModes are as declared (nil: the card defaults
	// apply); see Card.InputModes.
	InputModes           []string
	OutputModes          []string
	SecurityRequirements []SecurityRequirement
	Index                int // position in the served skills array

	requirementsKey string // "securityRequirements" or "security", as served
}

// SecurityRequirement maps a scheme name to the scopes required of it; a list
// of requirements is satisfied when any one of them is.
type SecurityRequirement map[string][]string

// SecurityScheme is a normalised security scheme. Type is one of "apiKey",
// "http", "oauth2", "openIdConnect", "mutualTLS".
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

type OAuthFlow struct {
	AuthorizationURL       string
	TokenURL               string
	RefreshURL             string
	DeviceAuthorizationURL string
	Scopes                 map[string]string // name → description

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

// InputModes returns the skill's input modes, else the card's defaults.
func (c *Card) InputModes(s Skill) []string {
	if s.InputModes != nil {
		return s.InputModes
	}
	return c.DefaultInputModes
}

// OutputModes returns the skill's output modes, else the card's defaults.
func (c *Card) OutputModes(s Skill) []string {
	if s.OutputModes != nil {
		return s.OutputModes
	}
	return c.DefaultOutputModes
}

// ProtocolVersions returns the distinct protocol versions of the interfaces,
// in order.
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

// Observation is one observation of an agent's live card: what was read at a
// card URL, when, and what verifying its signatures found. The fetcher makes
// it and the task core judges it.
type Observation struct {
	CardURL     string // as requested (redirects are not recorded)
	Digest      string
	Fingerprint string
	ETag        string // "" when the server sent none or an unusable one
	Card        *Card  // shared between callers: read-only
	// FetchedAt is when the fetch or revalidation behind it completed.
	FetchedAt time.Time
	// VerifiedAt is when a full fetch last confirmed the content: a 304
	// behind a version-derived ETag refreshes FetchedAt without looking.
	VerifiedAt time.Time
	// Signatures: nil for an unsigned card; nil on a signed one means its
	// signer is unknown.
	Signatures []Signature
	// Window is the consistency window split brain is judged over.
	Window time.Duration
	// Seen are the digests the agent served within Window (from the lease),
	// by which the task core tells a stale observation from a newer one.
	Seen []Sighting
	// Disagreeing are the digests served within Window while the replicas
	// disagree (Replicas.Disagree); nil otherwise.
	Disagreeing []string
}
