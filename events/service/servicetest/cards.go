package servicetest

// The pinning write-up's cards, "AGENT" standing for the agent's URL (see
// Agent): the client discovers WriteupT0; from T0+40s the vendor serves
// WriteupT40 (streaming off, skill translate added, bearer swapped for
// OAuth2 client credentials, the version unchanged).
const (
	WriteupT0 = `{"name":"Vendor B","version":"1.0.0","protocolVersion":"1.0.0","url":"AGENT",
"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"security":[{"bearer":[]}],
"skills":[{"id":"summarize","name":"Summarize","description":"Summarizes text","tags":["text"]}]}`
	WriteupT40 = `{"name":"Vendor B","version":"1.0.0","protocolVersion":"1.0.0","url":"AGENT",
"capabilities":{"streaming":false},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
"securitySchemes":{"oauth2":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://b.example/token","scopes":{"tasks":"run"}}}}},
"security":[{"oauth2":["tasks"]}],
"skills":[{"id":"summarize","name":"Summarize","description":"Summarizes text","tags":["text"]},
{"id":"translate","name":"Translate","description":"Translates text","tags":["text"]}]}`
)
