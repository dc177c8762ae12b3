package events

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

const upperHex = "0123456789ABCDEF"

// tokenSafe reports whether Token keeps byte c as it is.
func tokenSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// Token encodes an arbitrary id (a task id, an agent host) as one NATS
// subject token. Bytes in [A-Za-z0-9_-] are kept; every other byte — '.',
// '*', '>', spaces, '=', control characters, each byte of a non-ASCII UTF-8
// sequence (or of invalid UTF-8) — becomes "=XX", XX its value in upper-case
// hex. The empty string becomes "=", which no non-empty id encodes to.
//
// The encoding is injective (escapes are fixed-length and '=' is always
// escaped) and ParseToken reverses it. Its output uses only [A-Za-z0-9_=-],
// so it is also a valid JetStream KV key and never a wildcard. Ids that are
// already safe are returned unchanged, without allocating.
func Token(id string) string {
	n := 0
	for i := 0; i < len(id); i++ {
		if !tokenSafe(id[i]) {
			n++
		}
	}
	if n == 0 {
		if id == "" {
			return "="
		}
		return id
	}
	var b strings.Builder
	b.Grow(len(id) + 2*n)
	for i := 0; i < len(id); i++ {
		c := id[i]
		if tokenSafe(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&0xF])
	}
	return b.String()
}

// ParseToken reverses Token. It accepts exactly the strings Token returns
// (canonical form only: upper-case hex, no escapes of safe bytes) and returns
// an error wrapping ErrInvalidToken for anything else, so that
// Token(ParseToken(t)) == t whenever ParseToken succeeds.
func ParseToken(tok string) (string, error) {
	if tok == "=" {
		return "", nil
	}
	if tok == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalidToken)
	}
	if !strings.Contains(tok, "=") {
		for i := 0; i < len(tok); i++ {
			if !tokenSafe(tok[i]) {
				return "", fmt.Errorf("%w: byte %#x at %d", ErrInvalidToken, tok[i], i)
			}
		}
		return tok, nil
	}
	out := make([]byte, 0, len(tok))
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if tokenSafe(c) {
			out = append(out, c)
			continue
		}
		if c != '=' || i+2 >= len(tok) {
			return "", fmt.Errorf("%w: byte %#x at %d", ErrInvalidToken, c, i)
		}
		hi, ok1 := unhexUpper(tok[i+1])
		lo, ok2 := unhexUpper(tok[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("%w: bad escape %q at %d", ErrInvalidToken, tok[i:i+3], i)
		}
		v := hi<<4 | lo
		if tokenSafe(v) {
			return "", fmt.Errorf("%w: non-canonical escape %q at %d", ErrInvalidToken, tok[i:i+3], i)
		}
		out = append(out, v)
		i += 2
	}
	return string(out), nil
}

func unhexUpper(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// AgentHost returns the normalised host[:port] of an agent URL: the host
// lower-cased, a trailing dot and the scheme's default port (80 for http,
// 443 for https) removed, IPv6 addresses in brackets. Only http and https
// URLs with a host are accepted.
func AgentHost(agentURL string) (string, error) {
	u, err := url.Parse(agentURL)
	if err != nil {
		return "", fmt.Errorf("%w: agent URL: %v", ErrInvalidSubject, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%w: agent URL %q is not http(s)", ErrInvalidSubject, agentURL)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return "", fmt.Errorf("%w: agent URL %q has no host", ErrInvalidSubject, agentURL)
	}
	port := u.Port()
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		port = ""
	}
	if port != "" {
		return net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]", nil
	}
	return host, nil
}

// AgentKey returns the subject token of an agent: Token(AgentHost(agentURL)).
// Every URL of the same agent host (any path, either case, with or without
// the default port) has the same key.
func AgentKey(agentURL string) (string, error) {
	host, err := AgentHost(agentURL)
	if err != nil {
		return "", err
	}
	return Token(host), nil
}

// Subject prefixes of the contract, and the stream filters that cover every
// event (the default subjects of package topology's streams).
const (
	inboundPrefix  = "a2a.task."
	outboundPrefix = "card."

	// InboundSubjects covers every lifecycle event: a2a.task.<kind>.<taskId>.
	InboundSubjects = inboundPrefix + ">"
	// OutboundSubjects covers every carddrift event:
	// card.<event>.<agentKey>[.<taskId>].
	OutboundSubjects = outboundPrefix + ">"
)

// Subject returns the NATS subject an event with data d is published on:
// a2a.task.<kind>.<Token(taskId)> for lifecycle events (kind is submitted,
// request, status, artifact or error) and
// card.<event>.<AgentKey(agentUrl)>[.<Token(taskId)>] for carddrift events
// (event is drift, pinned, observed, unreachable or inconsistent; the task part is absent
// for agent-level events).
func Subject(d Data) (string, error) {
	if d == nil {
		return "", fmt.Errorf("%w: no data", ErrInvalidSubject)
	}
	typ := d.EventType()
	taskID, agentURL := d.ids()
	if kind, ok := strings.CutPrefix(typ, inboundPrefix); ok {
		if taskID == "" {
			return "", fmt.Errorf("%w: %s has no task id", ErrInvalidSubject, typ)
		}
		return inboundPrefix + kind + "." + Token(taskID), nil
	}
	key, err := AgentKey(agentURL)
	if err != nil {
		return "", err
	}
	s := typ + "." + key
	if taskID != "" {
		s += "." + Token(taskID)
	}
	return s, nil
}

func isInbound(typ string) bool {
	switch typ {
	case TypeSubmitted, TypeRequest, TypeStatus, TypeArtifact, TypeError:
		return true
	}
	return false
}
