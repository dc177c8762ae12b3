package schemas

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// formats are the formats the schemas assert, as the JSON Schema
// validator asserts them.
var formats = map[string]func(string) bool{"date-time": isDateTime, "uri": isURI}

// fastPatterns are loops equal to the regular expressions of the patterns
// every event checks (TestFastPatterns holds them to regexp).
var fastPatterns = map[string]func(string) bool{
	`^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\s]+`: httpURLPattern,
	`^[A-Za-z][A-Za-z0-9_-]{0,63}$`:      statePattern,
	`^sha256:[0-9a-f]{64}$`:              digestPattern,
	`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`:      ruleIDPattern,
}

// isDateTime is the date-time format as the JSON Schema validator asserts
// it (its validateDateTime, RFC 3339 §5.6 with a leap second allowed only
// at 23:59 UTC).
func isDateTime(s string) bool {
	if len(s) < 20 || s[10] != 't' && s[10] != 'T' {
		return false
	}
	if _, err := time.Parse("2006-01-02", s[:10]); err != nil {
		return false
	}
	return isTime(s[11:])
}

// isTime is the validator's validateTime.
func isTime(str string) bool {
	if len(str) < 9 || str[2] != ':' || str[5] != ':' {
		return false
	}
	var hms [3]int
	for i, tok := range strings.SplitN(str[:8], ":", 3) {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 {
			return false
		}
		hms[i] = n
	}
	h, m, sec := hms[0], hms[1], hms[2]
	if h > 23 || m > 59 || sec > 60 {
		return false
	}
	str = str[8:]
	if rem, ok := strings.CutPrefix(str, "."); ok {
		digits := 0
		for _, ch := range rem {
			if ch < '0' || ch > '9' {
				break
			}
			digits++
		}
		if digits == 0 {
			return false
		}
		str = rem[digits:]
	}
	if str != "z" && str != "Z" {
		if len(str) != 6 {
			return false
		}
		var sign int
		switch str[0] {
		case '+':
			sign = -1
		case '-':
			sign = +1
		default:
			return false
		}
		str = str[1:]
		if str[2] != ':' {
			return false
		}
		var zhm [2]int
		for i, tok := range strings.SplitN(str, ":", 2) {
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 {
				return false
			}
			zhm[i] = n
		}
		if zhm[0] > 23 || zhm[1] > 59 {
			return false
		}
		hm := (h*60 + m) + sign*(zhm[0]*60+zhm[1])
		if hm < 0 {
			hm += 24 * 60
		}
		h, m = hm/60, hm%60
	}
	return sec < 60 || h == 23 && m == 59
}

// httpURLPattern is ^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\s]+ (unanchored at the
// end: one character after "://" that is none of / ? # and RE2's \s,
// [\t\n\f\r ], suffices; an invalid UTF-8 byte reads as U+FFFD, which
// matches).
func httpURLPattern(s string) bool {
	if len(s) < 4 || s[0]|0x20 != 'h' || s[1]|0x20 != 't' || s[2]|0x20 != 't' || s[3]|0x20 != 'p' {
		return false
	}
	s = s[4:]
	if s != "" && s[0]|0x20 == 's' {
		s = s[1:]
	}
	if len(s) < 4 || s[:3] != "://" {
		return false
	}
	switch s[3] {
	case '/', '?', '#', '\t', '\n', '\f', '\r', ' ':
		return false
	}
	return true
}

// statePattern is ^[A-Za-z][A-Za-z0-9_-]{0,63}$.
func statePattern(s string) bool {
	if len(s) < 1 || len(s) > 64 || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !('0' <= c && c <= '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// digestPattern is ^sha256:[0-9a-f]{64}$.
func digestPattern(s string) bool {
	if len(s) != len("sha256:")+64 || s[:7] != "sha256:" {
		return false
	}
	for i := 7; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isURI is the uri format as the JSON Schema validator asserts it. Strings
// that pass are remembered (up to maxURIs): a fleet has few agent URLs.
func isURI(s string) bool {
	if plainHTTPURL(s) {
		return true
	}
	if _, ok := validURIs.Load(s); ok {
		return true
	}
	if !parsedURI(s) {
		return false
	}
	if validURICount.Add(1) <= maxURIs {
		validURIs.Store(strings.Clone(s), struct{}{}) // s may be a piece of a message
	}
	return true
}

// parsedURI is the uri format decided by url.Parse alone.
func parsedURI(s string) bool {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() {
		return false
	}
	if h := u.Hostname(); strings.Contains(h, ":") {
		if !strings.Contains(u.Host, "[") || !strings.Contains(u.Host, "]") {
			return false
		}
		addr, err := netip.ParseAddr(h)
		if err != nil || addr.Zone() != "" {
			return false
		}
	}
	return true
}

var (
	validURIs     sync.Map
	validURICount atomic.Int64
)

const maxURIs = 4096

// plainHTTPURL reports, without parsing, that s is an http(s) URL of the
// plainest form (host of letters, digits, dots and hyphens, a port, a path
// of path bytes; nothing else), which isURI always accepts: agent and card
// URLs skip url.Parse. TestPlainHTTPURL holds it to the uri format.
func plainHTTPURL(s string) bool {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return false
		}
	}
	i := 0
	for i < len(rest) && isHostByte(rest[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	if i < len(rest) && rest[i] == ':' {
		i++
		for i < len(rest) && '0' <= rest[i] && rest[i] <= '9' {
			i++
		}
	}
	if i == len(rest) {
		return true
	}
	if rest[i] != '/' {
		return false
	}
	for ; i < len(rest); i++ {
		if !isPathByte(rest[i]) {
			return false
		}
	}
	return true
}

func isHostByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-'
}

// isPathByte: RFC 3986 unreserved, sub-delims, ':', '@' and '/'.
func isPathByte(c byte) bool {
	if isHostByte(c) {
		return true
	}
	switch c {
	case '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@', '/':
		return true
	}
	return false
}

// ruleIDPattern is ^[a-z][a-z0-9]*(-[a-z0-9]+)*$.
func ruleIDPattern(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '-' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c == '-' && s[i-1] == '-' {
			return false
		}
		if c != '-' && !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
