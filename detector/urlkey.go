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
	u.Host = normalizeHost(u.Scheme, u.Host, u.Port())
	if u.Path == "" && u.RawPath == "" {
		u.Path = "/"
	}
	return u.String()
}

// normalizeHost is host[:port] in lower case without an empty port or the
// scheme's default one.
func normalizeHost(scheme, host, port string) string {
	host = strings.ToLower(host)
	switch {
	case port == "" && strings.HasSuffix(host, ":"):
		return strings.TrimSuffix(host, ":")
	case scheme == "https" && port == "443", scheme == "http" && port == "80":
		return strings.TrimSuffix(host, ":"+port)
	}
	return host
}
