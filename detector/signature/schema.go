package signature

// The v1.0 AgentCard schema of A2A v1.0.1's a2a.proto, as data: what the
// signing normalisation keeps. JSON names are lowerCamelCase, the proto name
// accepted on input, camelCase winning, as ts-proto's fromJSON does.

// kind is how a field is read and written.
type kind uint8

const (
	kString     kind = iota // string (implicit presence: "" is unset)
	kOptString              // optional string (explicit presence)
	kBool                   // bool (implicit presence: false is unset)
	kOptBool                // optional bool (explicit presence)
	kStrings                // repeated string
	kMessage                // message
	kMessages               // repeated message
	kMessageMap             // map<string, message>
	kStringMap              // map<string, string>
	kStruct                 // google.protobuf.Struct, carried as JSON
)

type field struct {
	name     string // JSON name
	alias    string // proto name, accepted on input when it differs from name
	kind     kind
	required bool     // [(google.api.field_behavior) = REQUIRED]
	msg      *message // for kMessage, kMessages and kMessageMap
}

// message is a protobuf message; with oneof its fields are one oneof's
// alternatives (the first set wins).
type message struct {
	fields []field
	oneof  bool
}

var (
	agentCard = &message{fields: []field{
		{name: "name", kind: kString, required: true},
		{name: "description", kind: kString, required: true},
		{name: "supportedInterfaces", alias: "supported_interfaces", kind: kMessages, required: true, msg: agentInterface},
		{name: "provider", kind: kMessage, msg: agentProvider},
		{name: "version", kind: kString, required: true},
		{name: "documentationUrl", alias: "documentation_url", kind: kOptString},
		{name: "capabilities", kind: kMessage, required: true, msg: agentCapabilities},
		{name: "securitySchemes", alias: "security_schemes", kind: kMessageMap, msg: securityScheme},
		{name: "securityRequirements", alias: "security_requirements", kind: kMessages, msg: securityRequirement},
		{name: "defaultInputModes", alias: "default_input_modes", kind: kStrings, required: true},
		{name: "defaultOutputModes", alias: "default_output_modes", kind: kStrings, required: true},
		{name: "skills", kind: kMessages, required: true, msg: agentSkill},
		// signatures (13) is left out of every signing form.
		{name: "iconUrl", alias: "icon_url", kind: kOptString},
	}}

	agentInterface = &message{fields: []field{
		{name: "url", kind: kString, required: true},
		{name: "protocolBinding", alias: "protocol_binding", kind: kString, required: true},
		{name: "tenant", kind: kString},
		{name: "protocolVersion", alias: "protocol_version", kind: kString, required: true},
	}}

	agentProvider = &message{fields: []field{
		{name: "url", kind: kString, required: true},
		{name: "organization", kind: kString, required: true},
	}}

	agentCapabilities = &message{fields: []field{
		{name: "streaming", kind: kOptBool},
		{name: "pushNotifications", alias: "push_notifications", kind: kOptBool},
		{name: "extensions", kind: kMessages, msg: agentExtension},
		{name: "extendedAgentCard", alias: "extended_agent_card", kind: kOptBool},
	}}

	agentExtension = &message{fields: []field{
		{name: "uri", kind: kString},
		{name: "description", kind: kString},
		{name: "required", kind: kBool},
		{name: "params", kind: kStruct},
	}}

	agentSkill = &message{fields: []field{
		{name: "id", kind: kString, required: true},
		{name: "name", kind: kString, required: true},
		{name: "description", kind: kString, required: true},
		{name: "tags", kind: kStrings, required: true},
		{name: "examples", kind: kStrings},
		{name: "inputModes", alias: "input_modes", kind: kStrings},
		{name: "outputModes", alias: "output_modes", kind: kStrings},
		{name: "securityRequirements", alias: "security_requirements", kind: kMessages, msg: securityRequirement},
	}}

	stringList = &message{fields: []field{
		{name: "list", kind: kStrings},
	}}

	securityRequirement = &message{fields: []field{
		{name: "schemes", kind: kMessageMap, msg: stringList},
	}}

	securityScheme = &message{oneof: true, fields: []field{
		{name: "apiKeySecurityScheme", alias: "api_key_security_scheme", kind: kMessage, msg: apiKeySecurityScheme},
		{name: "httpAuthSecurityScheme", alias: "http_auth_security_scheme", kind: kMessage, msg: httpAuthSecurityScheme},
		{name: "oauth2SecurityScheme", alias: "oauth2_security_scheme", kind: kMessage, msg: oauth2SecurityScheme},
		{name: "openIdConnectSecurityScheme", alias: "open_id_connect_security_scheme", kind: kMessage, msg: openIDConnectSecurityScheme},
		{name: "mtlsSecurityScheme", alias: "mtls_security_scheme", kind: kMessage, msg: mutualTLSSecurityScheme},
	}}

	apiKeySecurityScheme = &message{fields: []field{
		{name: "description", kind: kString},
		{name: "location", kind: kString, required: true},
		{name: "name", kind: kString, required: true},
	}}

	httpAuthSecurityScheme = &message{fields: []field{
		{name: "description", kind: kString},
		{name: "scheme", kind: kString, required: true},
		{name: "bearerFormat", alias: "bearer_format", kind: kString},
	}}

	oauth2SecurityScheme = &message{fields: []field{
		{name: "description", kind: kString},
		{name: "flows", kind: kMessage, required: true, msg: oauthFlows},
		{name: "oauth2MetadataUrl", alias: "oauth2_metadata_url", kind: kString},
	}}

	openIDConnectSecurityScheme = &message{fields: []field{
		{name: "description", kind: kString},
		{name: "openIdConnectUrl", alias: "open_id_connect_url", kind: kString, required: true},
	}}

	mutualTLSSecurityScheme = &message{fields: []field{
		{name: "description", kind: kString},
	}}

	oauthFlows = &message{oneof: true, fields: []field{
		{name: "authorizationCode", alias: "authorization_code", kind: kMessage, msg: authorizationCodeFlow},
		{name: "clientCredentials", alias: "client_credentials", kind: kMessage, msg: clientCredentialsFlow},
		{name: "implicit", kind: kMessage, msg: implicitFlow},
		{name: "password", kind: kMessage, msg: passwordFlow},
		{name: "deviceCode", alias: "device_code", kind: kMessage, msg: deviceCodeFlow},
	}}

	authorizationCodeFlow = &message{fields: []field{
		{name: "authorizationUrl", alias: "authorization_url", kind: kString, required: true},
		{name: "tokenUrl", alias: "token_url", kind: kString, required: true},
		{name: "refreshUrl", alias: "refresh_url", kind: kString},
		{name: "scopes", kind: kStringMap, required: true},
		{name: "pkceRequired", alias: "pkce_required", kind: kBool},
	}}

	clientCredentialsFlow = &message{fields: []field{
		{name: "tokenUrl", alias: "token_url", kind: kString, required: true},
		{name: "refreshUrl", alias: "refresh_url", kind: kString},
		{name: "scopes", kind: kStringMap, required: true},
	}}

	implicitFlow = &message{fields: []field{
		{name: "authorizationUrl", alias: "authorization_url", kind: kString},
		{name: "refreshUrl", alias: "refresh_url", kind: kString},
		{name: "scopes", kind: kStringMap},
	}}

	passwordFlow = &message{fields: []field{
		{name: "tokenUrl", alias: "token_url", kind: kString},
		{name: "refreshUrl", alias: "refresh_url", kind: kString},
		{name: "scopes", kind: kStringMap},
	}}

	deviceCodeFlow = &message{fields: []field{
		{name: "deviceAuthorizationUrl", alias: "device_authorization_url", kind: kString, required: true},
		{name: "tokenUrl", alias: "token_url", kind: kString, required: true},
		{name: "refreshUrl", alias: "refresh_url", kind: kString},
		{name: "scopes", kind: kStringMap, required: true},
	}}
)
