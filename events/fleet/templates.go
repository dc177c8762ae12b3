package fleet

import (
	"embed"
	"fmt"
	"strings"
)

// Generation is the A2A generation a card is written in: its discovery
// path and how scenarios spell what they edit.
type Generation string

// Generations of the embedded card templates.
const (
	GenV02    Generation = "v0.2"
	GenV03    Generation = "v0.3"
	GenV10    Generation = "v1.0"
	GenHybrid Generation = "hybrid"
)

// The discovery paths of A2A up to v0.2.6 and from v0.3.0 on.
const (
	LegacyCardPath = "/.well-known/agent.json"
	CardPath       = "/.well-known/agent-card.json"
)

// Path returns the well-known path a card of this generation is served at.
func (g Generation) Path() string {
	if g == GenV02 {
		return LegacyCardPath
	}
	return CardPath
}

//go:embed cards/*.json
var cardFiles embed.FS

// template is one embedded real card an agent's card is built from: Name is
// its file under cards/. Variant, when set, is a second card of the same
// agent served to requests with "A2A-Version: <VariantVersion>".
type template struct {
	Name           string
	Gen            Generation
	Variant        string
	VariantVersion string
}

// templates cover every generation and the features scenarios touch.
var templates = []template{
	{Name: "002-spec-v0.2.6-georoute-planner.json", Gen: GenV02},
	{Name: "021-samples-adk-check-prime-agent.json", Gen: GenV02},
	{Name: "025-samples-adk-currency-agent.json", Gen: GenV03},
	{Name: "030-java-dice-agent-multi-transport.json", Gen: GenV03},
	{Name: "031-java-magic-8-ball-oauth2.json", Gen: GenV03},
	{Name: "034-python-birthday-calendar-agent-oauth2.json", Gen: GenV03},
	{Name: "024-samples-adk-skills-currency-agent.json", Gen: GenV10},
	{Name: "027-a2a-go-json-test-georoute-planner.json", Gen: GenV10},
	{Name: "032-python-helloworld-public.json", Gen: GenV10},
	{Name: "004-spec-v1.0.1-georoute-planner-signed.json", Gen: GenHybrid},
	{Name: "009-a2a-cli-testdata-full.json", Gen: GenHybrid},
	{Name: "020-samples-commerce-profile-paid-translation.json", Gen: GenHybrid},
}

// varyTemplate is the agent that answers by A2A-Version: the v0.3 card of
// the ADK currency agent, and its v1.0 twin to "A2A-Version: 1.0".
var varyTemplate = template{
	Name:           "025-samples-adk-currency-agent.json",
	Gen:            GenV03,
	Variant:        "024-samples-adk-skills-currency-agent.json",
	VariantVersion: "1.0",
}

// renderTemplate builds the card an agent at host (an "ip:port") serves from
// an embedded template: every interface URL points at host, keeping its path.
func renderTemplate(name, host string) ([]byte, error) {
	raw, err := cardFiles.ReadFile("cards/" + name)
	if err != nil {
		return nil, fmt.Errorf("fleet: no template %q: %w", name, err)
	}
	e, err := newEditor(raw, "")
	if err != nil {
		return nil, fmt.Errorf("fleet: template %s: %w", name, err)
	}
	for _, o := range interfaces(e.v) {
		if u, ok := o["url"].(string); ok {
			o["url"] = rehost(u, host)
		}
	}
	return e.bytes(), nil
}

// rehost points u at host: "https://x.example.com/a2a/v1" becomes
// "http://host/a2a/v1", "localhost:11000" becomes host, "" stays.
func rehost(u, host string) string {
	if u == "" {
		return ""
	}
	i := strings.Index(u, "://")
	if i < 0 {
		return host
	}
	rest := u[i+3:]
	path := ""
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		path = rest[j:]
	}
	return "http://" + host + path
}
