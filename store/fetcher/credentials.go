package fetcher

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Credentials are what carddrift presents to an agent to be given its
// authenticated extended card (contract v1.2, "Authenticated extended
// cards"; carddrift serve --agent-credentials FILE): per agent origin, the
// headers to send (a bearer token, an API key) or a client certificate.
// They are sent only to the origin they are for — never across a redirect,
// never to a jku, never to another agent — and never printed: every value
// is a Secret, and a Credential prints the names of its headers only.

// redacted is how a Secret prints, whatever the verb or encoder.
const redacted = "[redacted]"

// Secret is a credential value that never prints: String, every
// fmt verb, JSON and text encoding (and so zerolog, slog and expvar) all
// give "[redacted]". Reveal is the one way to the value, for the request
// that carries it. The value is kept masked (XOR with a random pad of its
// own), so that even fmt's reflection over a struct holding a Secret in an
// unexported field, which calls no method, shows only the masked bytes.
type Secret struct{ masked, pad []byte }

// NewSecret wraps v.
func NewSecret(v string) Secret {
	s := Secret{masked: []byte(v), pad: make([]byte, len(v))}
	_, _ = rand.Read(s.pad)
	for i := range s.masked {
		s.masked[i] ^= s.pad[i]
	}
	return s
}

// Reveal returns the value, to put on a request to the credential's origin
// ("" for the zero Secret).
func (s Secret) Reveal() string {
	b := make([]byte, len(s.masked))
	for i := range b {
		b[i] = s.masked[i] ^ s.pad[i]
	}
	return string(b)
}

// String, Format (for every verb: %s, %v, %#v, %q, %x, ...), MarshalJSON
// and MarshalText all give "[redacted]".
func (Secret) String() string               { return redacted }
func (Secret) Format(f fmt.State, _ rune)   { _, _ = io.WriteString(f, redacted) }
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// Header is one header a Credential sends: its canonical name, and its value
// as a Secret.
type Header struct {
	Name  string
	Value Secret
}

// Credential is what is presented to one agent origin: headers, or a client
// certificate (never both). Its zero value presents nothing. It prints as
// the names of its headers, or "client certificate", never a value.
type Credential struct {
	headers []Header
	cert    *tls.Certificate
}

// String names what the credential presents, never a value.
func (c Credential) String() string {
	if c.cert != nil {
		return "client certificate"
	}
	names := make([]string, len(c.headers))
	for i, h := range c.headers {
		names[i] = h.Name
	}
	return "headers " + strings.Join(names, ", ")
}

// Format (for every verb) and MarshalJSON give String.
func (c Credential) Format(f fmt.State, _ rune)   { _, _ = io.WriteString(f, c.String()) }
func (c Credential) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", c.String())), nil }

// apply puts the credential's headers on req.
func (c Credential) apply(req *http.Request) {
	for _, h := range c.headers {
		req.Header.Set(h.Name, h.Value.Reveal())
	}
}

// CredentialSource answers which credential to present to an agent origin
// (in the normal form of Origin). *Credentials and *CredentialsFile are
// ones.
type CredentialSource interface {
	For(origin string) (Credential, bool)
}

// Credentials map agent origins to credentials; ParseCredentials makes
// them. Immutable, safe for concurrent use.
type Credentials struct {
	byOrigin map[string]Credential
}

// For returns the credential for origin (normal form, as Origin writes it).
func (c *Credentials) For(origin string) (Credential, bool) {
	if c == nil {
		return Credential{}, false
	}
	cr, ok := c.byOrigin[origin]
	return cr, ok
}

// String names the origins, never a credential's value.
func (c *Credentials) String() string {
	return fmt.Sprintf("credentials for %d origins %v", len(c.Origins()), c.Origins())
}

// Format writes String for every verb.
func (c *Credentials) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// MarshalJSON encodes the origins and what each is given, never a value.
func (c *Credentials) MarshalJSON() ([]byte, error) {
	m := make(map[string]string, len(c.Origins()))
	for _, o := range c.Origins() {
		m[o] = c.byOrigin[o].String()
	}
	return json.Marshal(m)
}

// Origins returns the origins credentials are held for, sorted.
func (c *Credentials) Origins() []string {
	if c == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(c.byOrigin))
}

// Bounds of a credentials file: its bytes, its origins, the headers of one
// origin, one header's name and value together, one certificate or key
// file, and the certificate and key files of the file together.
const (
	MaxCredentialsFileBytes  = 1 << 20
	MaxCredentialOrigins     = 4096
	MaxCredentialHeaders     = 16
	MaxCredentialHeaderBytes = 8 << 10
	MaxCredentialPEMBytes    = 256 << 10
	MaxCredentialPEMTotal    = 16 << 20
)

// Errors of a credentials file, each wrapped in a *CredentialsError. None of
// them, nor any message built on them, repeats a header value or a key.
var (
	// ErrCredentialsSyntax: the file is not a JSON object (strict JSON: no
	// duplicate keys, valid UTF-8, bounded nesting).
	ErrCredentialsSyntax = errors.New("not a JSON object of agent origins")
	// ErrCredentialsEntry: an entry is not {"headers": {…}} or {"cert": FILE,
	// "key": FILE}.
	ErrCredentialsEntry = errors.New(`want {"headers": {"Name": "value", …}} or {"cert": PEM_FILE, "key": PEM_FILE}`)
	// ErrCredentialsHeader: a header name is not a token, is one carddrift
	// sets itself or HTTP reserves (Host, Content-Length, A2A-Version, ...),
	// is given twice, or its value is empty, not a string, has control
	// characters or is too long.
	ErrCredentialsHeader = errors.New("bad header")
	// ErrCredentialsCertificate: the certificate or key file cannot be read
	// or does not hold a matching PEM certificate and private key.
	ErrCredentialsCertificate = errors.New("bad client certificate")
	// ErrCredentialsDuplicate: two spellings of one origin.
	ErrCredentialsDuplicate = errors.New("the same origin twice")
	// ErrCredentialsTooLarge: the file, its origins, an origin's headers or
	// the PEM files it names exceed their bounds.
	ErrCredentialsTooLarge = errors.New("too large")
)

// CredentialsError is what is wrong with a credentials file: File is its
// path ("" when parsed from bytes), Origin the entry ("" for the file as a
// whole). Err wraps one of the ErrCredentials errors or ErrNotOrigin.
type CredentialsError struct {
	File, Origin string
	Err          error
}

func (e *CredentialsError) Error() string {
	var b strings.Builder
	b.WriteString("agent credentials")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	if e.Origin != "" {
		fmt.Fprintf(&b, ": %q", e.Origin)
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

// Unwrap returns Err.
func (e *CredentialsError) Unwrap() error { return e.Err }

// reservedHeaders are set by carddrift itself, or by HTTP: a credential may
// not send them.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Transfer-Encoding": true,
	"Connection": true, "Upgrade": true, "Te": true, "Trailer": true, "Keep-Alive": true,
	"Proxy-Connection": true, "Accept": true, "A2a-Version": true, "User-Agent": true,
	"If-None-Match": true, "Cache-Control": true, "Expect": true,
}

// ParseCredentials reads a credentials file: a JSON object mapping agent
// origins to what is presented to them,
//
//	{
//	  "https://ledger.example":   {"headers": {"Authorization": "Bearer …"}},
//	  "https://maps.example:8443": {"cert": "certs/maps.pem", "key": "certs/maps.key"}
//	}
//
// An origin is scheme://host[:port] (ParseOrigin: "https://Ledger.example:443/"
// is "https://ledger.example"). "headers" maps header names (tokens, not
// one carddrift sets itself) to non-empty string values; "cert" and "key"
// name PEM files, which read returns (nil read: certificates are refused).
// Parsing is strict (jcs: no duplicate keys, no unknown members) and
// bounded (MaxCredentials…). Every error is a *CredentialsError and never
// repeats a value.
func ParseCredentials(b []byte, read func(path string) ([]byte, error)) (*Credentials, error) {
	fail := func(origin string, err error) (*Credentials, error) {
		return nil, &CredentialsError{Origin: origin, Err: err}
	}
	if len(b) > MaxCredentialsFileBytes {
		return fail("", fmt.Errorf("%w: larger than %d bytes", ErrCredentialsTooLarge, MaxCredentialsFileBytes))
	}
	v, err := jcs.ParseObject(b, jcs.Limits{MaxBytes: MaxCredentialsFileBytes, MaxDepth: 4})
	if err != nil {
		// Not the parser's quote of the input: it may be a secret.
		var se *jcs.SyntaxError
		if errors.As(err, &se) {
			return fail("", fmt.Errorf("%w: %w at byte %d", ErrCredentialsSyntax, se.Err, se.Offset))
		}
		return fail("", ErrCredentialsSyntax)
	}
	if len(v.Members) > MaxCredentialOrigins {
		return fail("", fmt.Errorf("%w: %d origins, at most %d", ErrCredentialsTooLarge, len(v.Members), MaxCredentialOrigins))
	}
	out := &Credentials{byOrigin: make(map[string]Credential, len(v.Members))}
	pemBudget := int64(MaxCredentialPEMTotal)
	for i := range v.Members {
		m := &v.Members[i]
		origin, err := ParseOrigin(m.Key)
		if err != nil {
			return fail(m.Key, err)
		}
		if _, dup := out.byOrigin[origin]; dup {
			return fail(m.Key, fmt.Errorf("%w: %s", ErrCredentialsDuplicate, origin))
		}
		c, err := credentialEntry(&m.Value, read, &pemBudget)
		if err != nil {
			return fail(m.Key, err)
		}
		out.byOrigin[origin] = c
	}
	return out, nil
}

// credentialEntry reads the value of one origin.
func credentialEntry(v *jcs.Value, read func(string) ([]byte, error), budget *int64) (Credential, error) {
	if v.Kind != jcs.Object {
		return Credential{}, fmt.Errorf("%w: a JSON %s", ErrCredentialsEntry, v.Kind)
	}
	keys := make([]string, len(v.Members))
	for i, m := range v.Members {
		keys[i] = m.Key
	}
	slices.Sort(keys)
	switch {
	case slices.Equal(keys, []string{"headers"}):
		return headerEntry(&v.Members[0].Value)
	case slices.Equal(keys, []string{"cert", "key"}):
		cert, _ := v.Get("cert")
		key, _ := v.Get("key")
		return certEntry(cert, key, read, budget)
	}
	return Credential{}, fmt.Errorf("%w: members %q", ErrCredentialsEntry, keys)
}

func headerEntry(v *jcs.Value) (Credential, error) {
	if v.Kind != jcs.Object || len(v.Members) == 0 {
		return Credential{}, fmt.Errorf("%w: headers must be a non-empty object", ErrCredentialsEntry)
	}
	if len(v.Members) > MaxCredentialHeaders {
		return Credential{}, fmt.Errorf("%w: %d headers, at most %d", ErrCredentialsTooLarge, len(v.Members), MaxCredentialHeaders)
	}
	var c Credential
	for _, m := range v.Members {
		if !httpguts.ValidHeaderFieldName(m.Key) {
			return Credential{}, fmt.Errorf("%w: name %q is not an HTTP token", ErrCredentialsHeader, m.Key)
		}
		name := http.CanonicalHeaderKey(m.Key)
		if reservedHeaders[name] {
			return Credential{}, fmt.Errorf("%w: %s is set by carddrift or HTTP, not by a credential", ErrCredentialsHeader, name)
		}
		if slices.ContainsFunc(c.headers, func(h Header) bool { return h.Name == name }) {
			return Credential{}, fmt.Errorf("%w: %s given twice", ErrCredentialsHeader, name)
		}
		switch {
		case m.Value.Kind != jcs.String:
			return Credential{}, fmt.Errorf("%w: the value of %s is a JSON %s, not a string", ErrCredentialsHeader, name, m.Value.Kind)
		case m.Value.Str == "" || strings.TrimSpace(m.Value.Str) != m.Value.Str:
			return Credential{}, fmt.Errorf("%w: the value of %s is empty or has surrounding space", ErrCredentialsHeader, name)
		case !validHeaderValue(m.Value.Str) || strings.ContainsAny(m.Value.Str, "\t"):
			return Credential{}, fmt.Errorf("%w: the value of %s has control characters", ErrCredentialsHeader, name)
		case len(name)+len(m.Value.Str) > MaxCredentialHeaderBytes:
			return Credential{}, fmt.Errorf("%w: %s is longer than %d bytes", ErrCredentialsTooLarge, name, MaxCredentialHeaderBytes)
		}
		c.headers = append(c.headers, Header{Name: name, Value: NewSecret(m.Value.Str)})
	}
	return c, nil
}

func certEntry(cert, key *jcs.Value, read func(string) ([]byte, error), budget *int64) (Credential, error) {
	if cert.Kind != jcs.String || cert.Str == "" || key.Kind != jcs.String || key.Str == "" {
		return Credential{}, fmt.Errorf("%w: cert and key must name files", ErrCredentialsEntry)
	}
	if read == nil {
		return Credential{}, fmt.Errorf("%w: no files can be read here", ErrCredentialsCertificate)
	}
	load := func(what, path string) ([]byte, error) {
		b, err := read(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %s: %w", ErrCredentialsCertificate, what, path, err)
		}
		if len(b) > MaxCredentialPEMBytes {
			return nil, fmt.Errorf("%w: %s %s is larger than %d bytes", ErrCredentialsTooLarge, what, path, MaxCredentialPEMBytes)
		}
		if *budget -= int64(len(b)); *budget < 0 {
			return nil, fmt.Errorf("%w: the PEM files are larger than %d bytes together", ErrCredentialsTooLarge, MaxCredentialPEMTotal)
		}
		return b, nil
	}
	cb, err := load("cert", cert.Str)
	if err != nil {
		return Credential{}, err
	}
	kb, err := load("key", key.Str)
	if err != nil {
		return Credential{}, err
	}
	pair, err := tls.X509KeyPair(cb, kb)
	if err != nil {
		// tls's errors name what is wrong, never the key's bytes.
		return Credential{}, fmt.Errorf("%w: %s and %s: %w", ErrCredentialsCertificate, cert.Str, key.Str, err)
	}
	return Credential{cert: &pair}, nil
}
