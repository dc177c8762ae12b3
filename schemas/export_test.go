package schemas

import (
	"net/netip"
	"net/url"
	"strings"
)

// ValidateGeneral validates v with the JSON Schema validator only: the
// oracle the compiled checks are held to.
func (s *Schema) ValidateGeneral(v any) error { return s.validateGeneral(v) }

// CheckCompiled applies the schema's compiled checks to v: has is false
// for a schema without them; otherwise ok says whether v conforms and
// field names the first violating field when it does not.
func (s *Schema) CheckCompiled(v any) (field string, ok, has bool) {
	if s.fast == nil {
		return "", false, false
	}
	field, ok = checkCompiled(s.fast, v)
	return field, ok, true
}

// PlainHTTPURL is plainHTTPURL, for TestPlainHTTPURL.
func PlainHTTPURL(s string) bool { return plainHTTPURL(s) }

// IsURIGeneral is the uri format decided by url.Parse, without the
// shortcut of plainHTTPURL or the cache.
func IsURIGeneral(s string) bool {
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
