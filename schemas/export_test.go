package schemas

import (
	"net/netip"
	"net/url"
	"strings"
)

// PlainHTTPURL is plainHTTPURL, for TestPlainHTTPURL.
func PlainHTTPURL(s string) bool { return plainHTTPURL(s) }

// FastPatterns are the loops that stand for patterns, by pattern.
var FastPatterns = fastPatterns

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

// Tame is tame, for TestTame.
func Tame(lit string) string { return tame(lit) }
