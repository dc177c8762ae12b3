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

// Token encodes any id as one NATS subject token (also a KV key, never a
// wildcard): bytes in [A-Za-z0-9_-] stay, every other byte becomes "=XX"
// (upper-case hex), and "" becomes "=". It is injective; ParseToken
// reverses it. Safe ids are returned without allocating.
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
// and returns an error wrapping ErrInvalidToken for anything else.
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

// AgentHost returns the normalised host[:port] of an http(s) agent URL:
// lower-cased, without a trailing dot or default port, IPv6 in brackets.
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

// AgentKey returns Token(AgentHost(agentURL)), one key per agent host.
func AgentKey(agentURL string) (string, error) {
	host, err := AgentHost(agentURL)
	if err != nil {
		return "", err
	}
	return Token(host), nil
}

// The stream filters that cover every lifecycle and every carddrift event.
const (
	inboundPrefix    = "a2a.task."
	outboundPrefix   = "card."
	InboundSubjects  = inboundPrefix + ">"
	OutboundSubjects = outboundPrefix + ">"
)

// Subject returns the subject of data d: a2a.task.<kind>.<Token(taskId)>,
// or card.<event>.<AgentKey(agentUrl)>[.<Token(taskId)>].
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
