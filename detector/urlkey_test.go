package detector

import (
	"strings"
	"testing"
)

// urlSeeds are spellings of interface urls, well-formed and not: the seed
// corpus of FuzzNormalizeURL, and TestNormalizeURLAgreesWithLegacy's table.
var urlSeeds = []string{
	"https://Agent.Example.com:443", "https://agent.example.com/", "HTTPS://agent.example.com",
	"http://agent.example.com:80/a2a", "http://agent.example.com:/a2a", "https://agent.example.com:8443/a2a",
	"http://agent.example.com:443/a2a", "https://agent.example.com/A2A?x=1", "https://agent.example.com/a?",
	"https://agent.example.com/a??", "https://agent.example.com/a b", "https://agent.example.com/a%20b",
	"https://agent.example.com/a%2fb", "https://agent.example.com/a%2Fb%zz", "https://agent.example.com/%7e",
	"https://agent.example.com/ü", "https://agent.example.com/a#frag", "https://agent.example.com/a#fr ag",
	"https://agent.example.com/a#%41", "https://agent.example.com/a#%", "https://agent.example.com/a#",
	"https://user:p%40ss@Agent.example.com/", "https://us er@agent.example.com/", "https://a@b@agent.example.com/",
	"https://user@agent.example.com", "https://:pw@agent.example.com", "https://%41@agent.example.com",
	"https://[::1]:443", "https://[::1]", "https://[FE80::1%25en0]:8443/a2a", "https://[fe80::1%25]/",
	"https://[::ffff:1.2.3.4]/", "https://[1.2.3.4]/", "https://[::1", "https://x[::1]/", "https://[1:2:3:4:5:6:7:8]/",
	"https://[1:2:3:4:5:6:7::]/", "https://[1::2::3]/", "https://[::1.2.3.04]/", "https://[12345::]/", "https://[::]/",
	"https://[1:2:3:4:5:6:1.2.3.4]/", "https://[1:2:3:4:5:1.2.3.4]/", "https://[:1]/", "https://[1:]/",
	"https://a:b:443/", "mongodb://a:1,b:2/db", "mongodb://a:1:2/db", "https://agent.example.com:x/",
	"https://agent%2Eexample.com/", "https://agent%c3%bc.example/", "https://ag<ent/", "https://agent.Example.com:/",
	"https://:443", "//Agent.Example.com:80/x", "///a", "http:///a", "http:/a", "grpc.example.com:443", "localhost:50051",
	"", "%zz", "*", ":foo", "a:b/c", "HTTP://a.b", "h\x7ftp://a", "https://a.b/\x01", "https://a.b/#\x01",
	"https://Agent.example.com:0443", "https://agent.example.com:443:443/", "ws://Host:80/", "git+ssh://HOST:22/x",
}

func TestNormalizeURLAgreesWithLegacy(t *testing.T) {
	for _, s := range urlSeeds {
		if got, want := normalizeURL(s), legacyNormalizeURL(s); got != want {
			t.Errorf("normalizeURL(%q) = %q, the hand copy gave %q", s, got, want)
		}
	}
}

// FuzzNormalizeURL holds normalizeURL on net/url to the hand copy it
// replaced: the same key for every input, so no two interface urls became
// the same endpoint, or stopped being one, when the detector moved to
// net/url.
func FuzzNormalizeURL(f *testing.F) {
	for _, s := range urlSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := normalizeURL(s), legacyNormalizeURL(s); got != want {
			t.Errorf("normalizeURL(%q) = %q, the hand copy gave %q", s, got, want)
		}
	})
}

// legacyNormalizeURL is normalizeURL as it was before it stood on net/url:
// a hand copy of Go 1.26's url.Parse and URL.String for the fields
// normalizeHost needs, written when the detector imported no net/*. It is
// the oracle of FuzzNormalizeURL: the net/url normalisation must give every
// input the key this one gave, so moving to net/url changed no verdict.
func legacyNormalizeURL(s string) string {
	u, ok := parseURL(s)
	if !ok || u.host == "" {
		return s
	}
	u.host = normalizeHost(u.scheme, u.host, hostPort(u.host))
	if u.path == "" && u.rawPath == "" {
		u.path = "/"
	}
	return u.String()
}

// urlParts are the parts of a url with an authority ("//host") that
// normalizeURL reads and writes, as net/url's URL holds them.
type urlParts struct {
	scheme                string
	user, password        string
	hasUser, hasPassword  bool
	host                  string
	path, rawPath         string
	forceQuery            bool
	rawQuery              string
	fragment, rawFragment string
}

// parseURL parses s as net/url's Parse does. ok is false when Parse fails
// or s has no authority (an opaque or relative url: no host to normalise).
func parseURL(s string) (u urlParts, ok bool) {
	rest, frag, _ := strings.Cut(s, "#")
	for i := 0; i < len(rest); i++ {
		if rest[i] < ' ' || rest[i] == 0x7f {
			return u, false
		}
	}
	if rest == "*" {
		return u, false
	}
	scheme, rest, ok := urlScheme(rest)
	if !ok {
		return u, false
	}
	u.scheme = strings.ToLower(scheme)
	if strings.HasSuffix(rest, "?") && strings.Count(rest, "?") == 1 {
		u.forceQuery = true
		rest = rest[:len(rest)-1]
	} else {
		rest, u.rawQuery, _ = strings.Cut(rest, "?")
	}
	// Without a leading "//" (an opaque url, a relative path, a "///" path
	// without a scheme) there is no host.
	if !strings.HasPrefix(rest, "//") || u.scheme == "" && strings.HasPrefix(rest, "///") {
		return u, false
	}
	authority := rest[2:]
	rest = ""
	if i := strings.IndexByte(authority, '/'); i >= 0 {
		authority, rest = authority[:i], authority[i:]
	}
	if !u.authority(authority) {
		return u, false
	}
	if u.path, u.rawPath, ok = unescapePart(rest, encodePath); !ok {
		return u, false
	}
	if frag != "" {
		u.fragment, u.rawFragment, ok = unescapePart(frag, encodeFragment)
	}
	return u, ok
}

// unescapePart decodes the path or fragment raw, and keeps raw too when
// escaping the result does not give it back, as net/url's setPath does.
func unescapePart(raw string, mode urlEncoding) (decoded, kept string, ok bool) {
	decoded, bad := unescapeURL(raw, mode)
	if bad {
		return "", "", false
	}
	if escapeURL(decoded, mode) != raw {
		kept = raw
	}
	return decoded, kept, true
}

// urlScheme splits a leading scheme ([a-zA-Z][a-zA-Z0-9+.-]*) and its ':'
// off s, as net/url's getScheme; ok is false for a ':' at the start.
func urlScheme(s string) (scheme, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return "", s, true
			}
		case c == ':':
			if i == 0 {
				return "", "", false
			}
			return s[:i], s[i+1:], true
		default:
			return "", s, true
		}
	}
	return "", s, true
}

// authority parses [userinfo@]host[:port] into u, as net/url's
// parseAuthority.
func (u *urlParts) authority(a string) bool {
	i := strings.LastIndexByte(a, '@')
	host, ok := parseURLHost(u.scheme, a[i+1:])
	if !ok {
		return false
	}
	u.host = host
	if i < 0 {
		return true
	}
	userinfo := a[:i]
	if !validUserinfo(userinfo) {
		return false
	}
	u.hasUser = true
	name, password, hasPassword := strings.Cut(userinfo, ":")
	var err bool
	if u.user, err = unescapeURL(name, encodeUserPassword); err {
		return false
	}
	if hasPassword {
		u.hasPassword = true
		if u.password, err = unescapeURL(password, encodeUserPassword); err {
			return false
		}
	}
	return true
}

// parseURLHost parses host[:port] as net/url's parseHost, returning the
// host unescaped.
func parseURLHost(scheme, host string) (string, bool) {
	if open := strings.LastIndexByte(host, '['); open > 0 {
		return "", false
	} else if open == 0 {
		closing := strings.LastIndexByte(host, ']')
		if closing < 0 {
			return "", false
		}
		colonPort := host[closing+1:]
		if !validOptionalPort(colonPort) {
			return "", false
		}
		name := host[1:closing]
		var unescaped string
		if zone := strings.Index(name, "%25"); zone >= 0 {
			h, err1 := unescapeURL(name[:zone], encodeHost)
			z, err2 := unescapeURL(name[zone:], encodeZone)
			if err1 || err2 {
				return "", false
			}
			unescaped = h + z
		} else {
			var err bool
			if unescaped, err = unescapeURL(name, encodeHost); err {
				return "", false
			}
		}
		// Only an IPv6 address (not an IPv4 one) goes in brackets.
		if !ipv6Literal(unescaped) {
			return "", false
		}
		return "[" + unescaped + "]" + colonPort, true
	} else if i := strings.IndexByte(host, ':'); i >= 0 {
		// Go 1.26's strict colons: in an http or https host, the port
		// starts at the first colon; elsewhere at the last.
		if last := strings.LastIndexByte(host, ':'); last != i && scheme != "http" && scheme != "https" {
			i = last
		}
		if !validOptionalPort(host[i:]) {
			return "", false
		}
	}
	h, err := unescapeURL(host, encodeHost)
	return h, !err
}

// ipv6Literal reports whether s is what net/netip's ParseAddr parses as an
// IPv6 address (with an optional zone): ParseAddr parses s as IPv6 when a
// ':' comes before any '.' or '%'.
func ipv6Literal(s string) bool {
	if i := strings.IndexAny(s, ".:%"); i < 0 || s[i] != ':' {
		return false
	}
	if i := strings.IndexByte(s, '%'); i >= 0 {
		if i == len(s)-1 {
			return false // an empty zone
		}
		s = s[:i]
	}
	ellipsis := -1
	if strings.HasPrefix(s, "::") {
		ellipsis = 0
		if s = s[2:]; s == "" {
			return true
		}
	}
	n := 0 // bytes of the address parsed
	for n < 16 {
		off, acc := 0, 0
		for ; off < len(s); off++ {
			d := hexDigit(s[off])
			if d < 0 {
				break
			}
			if acc = acc<<4 + d; off > 3 || acc > 0xffff {
				return false
			}
		}
		if off == 0 {
			return false
		}
		if off < len(s) && s[off] == '.' {
			if ellipsis < 0 && n != 12 || n+4 > 16 || !ipv4Fields(s) {
				return false
			}
			s, n = "", n+4
			break
		}
		n += 2
		if s = s[off:]; s == "" {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return false
		}
		if s = s[1:]; s[0] == ':' {
			if ellipsis >= 0 {
				return false
			}
			ellipsis = n
			if s = s[1:]; s == "" {
				break
			}
		}
	}
	switch {
	case s != "":
		return false
	case n < 16:
		return ellipsis >= 0
	default:
		return ellipsis < 0
	}
}

// ipv4Fields reports whether s is a dotted-decimal IPv4 address as
// net/netip parses one: four fields, each 0 to 255 without leading zeros.
func ipv4Fields(s string) bool {
	val, fields, digits := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			if digits == 1 && val == 0 {
				return false
			}
			val, digits = val*10+int(c-'0'), digits+1
			if val > 255 {
				return false
			}
		case c == '.':
			if i == 0 || i == len(s)-1 || s[i-1] == '.' || fields == 3 {
				return false
			}
			val, digits, fields = 0, 0, fields+1
		default:
			return false
		}
	}
	return fields == 3
}

// hexDigit returns the value of the hex digit c, or -1.
func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// validOptionalPort reports whether port is empty or ':' and digits.
func validOptionalPort(port string) bool {
	if port == "" {
		return true
	}
	if port[0] != ':' {
		return false
	}
	for i := 1; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	return true
}

// hostPort returns the port of host[:port], as net/url's URL.Port.
func hostPort(host string) string {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && validOptionalPort(host[i:]) {
		return host[i+1:]
	}
	return ""
}

// validUserinfo reports whether s is made of userinfo's characters
// (RFC 3986 §3.2.1, and '@'), as net/url's.
func validUserinfo(s string) bool {
	for _, r := range s {
		switch {
		case 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z', '0' <= r && r <= '9':
		case strings.ContainsRune("-._:~!$&'()*+,;=%@", r):
		default:
			return false
		}
	}
	return true
}

// String reassembles the url as net/url's URL.String does for a url with
// an authority.
func (u urlParts) String() string {
	var b strings.Builder
	if u.scheme != "" {
		b.WriteString(u.scheme)
		b.WriteByte(':')
	}
	if u.scheme != "" || u.host != "" || u.hasUser {
		if u.host != "" || u.path != "" || u.hasUser {
			b.WriteString("//")
		}
		if u.hasUser {
			b.WriteString(escapeURL(u.user, encodeUserPassword))
			if u.hasPassword {
				b.WriteByte(':')
				b.WriteString(escapeURL(u.password, encodeUserPassword))
			}
			b.WriteByte('@')
		}
		b.WriteString(escapeURL(u.host, encodeHost))
	}
	path := escapedURL(u.path, u.rawPath, encodePath)
	if path != "" && path[0] != '/' && u.host != "" {
		b.WriteByte('/')
	}
	if b.Len() == 0 {
		if segment, _, _ := strings.Cut(path, "/"); strings.Contains(segment, ":") {
			b.WriteString("./")
		}
	}
	b.WriteString(path)
	if u.forceQuery || u.rawQuery != "" {
		b.WriteByte('?')
		b.WriteString(u.rawQuery)
	}
	if u.fragment != "" {
		b.WriteByte('#')
		b.WriteString(escapedURL(u.fragment, u.rawFragment, encodeFragment))
	}
	return b.String()
}

// escapedURL returns raw when it is a valid escaping of decoded, else the
// default escaping (net/url's EscapedPath and EscapedFragment).
func escapedURL(decoded, raw string, mode urlEncoding) string {
	if raw != "" && validEncoded(raw, mode) {
		if d, err := unescapeURL(raw, mode); !err && d == decoded {
			return raw
		}
	}
	if mode == encodePath && decoded == "*" {
		return "*"
	}
	return escapeURL(decoded, mode)
}

// validEncoded reports whether s has no byte that needs escaping in mode
// (RFC 3986's pchar, and '[' ']').
func validEncoded(s string, mode urlEncoding) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune("!$&'()*+,;=:@[]%", rune(s[i])) && shouldEscapeURL(s[i], mode) {
			return false
		}
	}
	return true
}

// urlEncoding is a part of a url, for its escaping rules (net/url's
// encoding modes that normalizeURL meets).
type urlEncoding int

const (
	encodePath urlEncoding = iota
	encodeHost
	encodeZone
	encodeUserPassword
	encodeFragment
)

// shouldEscapeURL reports whether c is escaped in the part mode of a url,
// as net/url's shouldEscape.
func shouldEscapeURL(c byte, mode urlEncoding) bool {
	if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
		return false
	}
	if mode == encodeHost || mode == encodeZone {
		switch c {
		case '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '[', ']', '<', '>', '"':
			return false
		}
	}
	switch c {
	case '-', '_', '.', '~':
		return false
	case '$', '&', '+', ',', '/', ':', ';', '=', '?', '@':
		switch mode {
		case encodePath:
			return c == '?'
		case encodeUserPassword:
			return c == '@' || c == '/' || c == '?' || c == ':'
		case encodeFragment:
			return false
		}
	}
	if mode == encodeFragment {
		switch c {
		case '!', '(', ')', '*':
			return false
		}
	}
	return true
}

// unescapeURL decodes s's %XX escapes, as net/url's unescape for mode; err
// is set for a malformed escape, or a host byte that cannot be in one.
func unescapeURL(s string, mode urlEncoding) (string, bool) {
	n := 0
	for i := 0; i < len(s); {
		switch s[i] {
		case '%':
			n++
			if i+2 >= len(s) || hexDigit(s[i+1]) < 0 || hexDigit(s[i+2]) < 0 {
				return "", true
			}
			v := byte(hexDigit(s[i+1])<<4 | hexDigit(s[i+2]))
			if mode == encodeHost && hexDigit(s[i+1]) < 8 && s[i:i+3] != "%25" {
				return "", true
			}
			if mode == encodeZone && s[i:i+3] != "%25" && v != ' ' && shouldEscapeURL(v, encodeHost) {
				return "", true
			}
			i += 3
		default:
			if (mode == encodeHost || mode == encodeZone) && s[i] < 0x80 && shouldEscapeURL(s[i], mode) {
				return "", true
			}
			i++
		}
	}
	if n == 0 {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s) - 2*n)
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			b.WriteByte(byte(hexDigit(s[i+1])<<4 | hexDigit(s[i+2])))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), false
}

// escapeURL escapes the bytes of s that mode escapes as %XX (net/url's
// escape, upper-case hex).
func escapeURL(s string, mode urlEncoding) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !shouldEscapeURL(c, mode) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
