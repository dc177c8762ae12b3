package detector

import (
	"net/url"
	"strings"
)

// normalizeURL returns the form under which two spellings of one endpoint
// are equal: host in lower case, the scheme's default port dropped, an empty
// path written "/"; path, query and fragment as URL.String escapes them. A url
// without a host (a gRPC target) or that net/url refuses is kept as written.
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
