package detector

import (
	"net/url"
	"strings"
)

// normalizeURL returns the form of an interface url under which two
// spellings of one endpoint are equal: scheme and host in lower case, the
// scheme's default port (443 for https, 80 for http) and an empty port
// dropped, and an empty path written "/". So "https://Agent.Example.com:443"
// equals "https://agent.example.com/". Path, query and fragment are kept as
// they are (paths are case-sensitive), in the escaping URL.String gives
// them. A url without a host (a gRPC "host:port" target, say), or one
// net/url does not parse, is compared as written.
func normalizeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	host := strings.ToLower(u.Host)
	switch port := u.Port(); {
	case port == "" && strings.HasSuffix(host, ":"):
		host = strings.TrimSuffix(host, ":")
	case u.Scheme == "https" && port == "443", u.Scheme == "http" && port == "80":
		host = strings.TrimSuffix(host, ":"+port)
	}
	u.Host = host
	if u.Path == "" && u.RawPath == "" {
		u.Path = "/"
	}
	return u.String()
}
