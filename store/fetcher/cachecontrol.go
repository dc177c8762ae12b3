package fetcher

import (
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// cacheControl is what the fetcher needs from a response's Cache-Control.
type cacheControl struct {
	// maxAge is the max-age directive; valid only when hasMaxAge.
	maxAge    time.Duration
	hasMaxAge bool
	// revalidate is set by no-cache, no-store, an invalid max-age, or
	// max-age given twice with different values (RFC 9111 §4.2.1: treat as
	// stale). The lease is then the lower clamp.
	revalidate bool
}

// maxDeltaSeconds caps delta-seconds as RFC 9111 §1.2.2 advises (2^31).
const maxDeltaSeconds = 1 << 31

// parseCacheControl reads every Cache-Control field line of a response. It
// never fails: unknown directives are ignored and malformed ones err on the
// side of revalidating. Directive names are case-insensitive; values may be
// tokens or quoted strings (which may contain commas).
func parseCacheControl(lines []string) cacheControl {
	var cc cacheControl
	for _, line := range lines {
		for s := line; s != ""; {
			var name, value string
			var hasValue, ok bool
			name, value, hasValue, s, ok = nextDirective(s)
			if !ok {
				// Unparseable remainder: stop reading this line.
				break
			}
			switch strings.ToLower(name) {
			case "no-cache", "no-store":
				cc.revalidate = true
			case "max-age":
				secs, valid := parseDeltaSeconds(value)
				if !hasValue || !valid {
					cc.revalidate = true
					continue
				}
				d := time.Duration(secs) * time.Second
				if cc.hasMaxAge && cc.maxAge != d {
					cc.revalidate = true
				}
				if !cc.hasMaxAge || d < cc.maxAge {
					cc.maxAge = d
				}
				cc.hasMaxAge = true
			}
		}
	}
	return cc
}

// nextDirective splits the first directive off s. It returns the directive's
// name and value, whether it had "=", the rest of s after the following comma,
// and ok=false when s cannot be parsed further. Empty list elements (",,")
// are allowed.
func nextDirective(s string) (name, value string, hasValue bool, rest string, ok bool) {
	s = strings.TrimLeft(s, " \t,")
	if s == "" {
		return "", "", false, "", true
	}
	name, s = cutToken(s)
	if name == "" {
		return "", "", false, "", false
	}
	if s = trimOWS(s); strings.HasPrefix(s, "=") {
		hasValue = true
		if s = trimOWS(s[1:]); strings.HasPrefix(s, `"`) {
			v, n, qok := readQuoted(s)
			if !qok {
				return "", "", false, "", false
			}
			value, s = v, s[n:]
		} else {
			value, s = cutToken(s)
		}
		s = trimOWS(s)
	}
	switch {
	case s == "":
		return name, value, hasValue, "", true
	case s[0] == ',':
		return name, value, hasValue, s[1:], true
	}
	return "", "", false, "", false
}

// cutToken splits the RFC 9110 token at the start of s off it.
func cutToken(s string) (token, rest string) {
	i := strings.IndexFunc(s, func(r rune) bool { return !httpguts.IsTokenRune(r) })
	if i < 0 {
		i = len(s)
	}
	return s[:i], s[i:]
}

// readQuoted reads a quoted-string at the start of s (which begins with '"').
// It returns the unescaped content and the number of bytes consumed.
func readQuoted(s string) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, true
		case '\\':
			if i+1 >= len(s) {
				return "", 0, false
			}
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// parseDeltaSeconds reads 1*DIGIT, capped at 2^31.
func parseDeltaSeconds(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < maxDeltaSeconds {
			n = n*10 + int64(c-'0')
		}
	}
	return min(n, maxDeltaSeconds), true
}

func trimOWS(s string) string { return strings.Trim(s, " \t") }

// leaseFor returns how long an observation from a response with header h stays
// valid: max-age minus Age when the server sent max-age, the lower clamp for
// no-cache, no-store, max-age=0 or a malformed max-age, def when there is no
// max-age at all — always clamped to [lo, hi].
func leaseFor(h http.Header, def, lo, hi time.Duration) time.Duration {
	cc := parseCacheControl(h.Values("Cache-Control"))
	var d time.Duration
	switch {
	case cc.revalidate:
		d = 0
	case cc.hasMaxAge:
		// The response's Age (RFC 9111 §5.1) has passed already; a
		// malformed one is ignored.
		d = cc.maxAge
		if age := h.Values("Age"); len(age) > 0 {
			if secs, ok := parseDeltaSeconds(trimOWS(age[0])); ok {
				d -= time.Duration(secs) * time.Second
			}
		}
	default:
		d = def
	}
	return clampDuration(d, lo, hi)
}

func clampDuration(d, lo, hi time.Duration) time.Duration {
	return max(lo, min(d, hi))
}

// maxETagLen bounds the ETag the fetcher stores and sends back.
const maxETagLen = 512

// parseETag returns the response's entity tag as it should be sent back in
// If-None-Match, or "" when there is none usable: missing, repeated, too long,
// or containing bytes that are not allowed in a header value. A strong
// ("...") or weak (W/"...") entity-tag is returned as sent; a bare token, which
// some servers send although RFC 9110 requires quotes, is accepted as sent too
// (the server will recognise its own value).
func parseETag(lines []string) string {
	if len(lines) != 1 {
		return ""
	}
	t := trimOWS(lines[0])
	body, weak := strings.CutPrefix(t, "W/")
	quoted := len(body) >= 2 && body[0] == '"' && body[len(body)-1] == '"'
	if t == "" || len(t) > maxETagLen || weak && !quoted {
		return ""
	}
	if quoted {
		body = body[1 : len(body)-1]
	}
	// A bare form may hold no comma either (it would split If-None-Match
	// into a list).
	for i := 0; i < len(body); i++ {
		if !isETagChar(body[i]) || !quoted && body[i] == ',' {
			return ""
		}
	}
	return t
}

// isETagChar reports an RFC 9110 etagc: %x21 / %x23-7E / obs-text.
func isETagChar(c byte) bool {
	return c == 0x21 || (c >= 0x23 && c <= 0x7e) || c >= 0x80
}
