package fetcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/carddrift/carddrift/detector/signature"
)

// Trust is scoped (contract v1.2, "Signed cards"): a key is trusted for the
// agents its operator says. SignatureOptions.Trusted and TrustedURL (carddrift
// --jwks) are trusted for every agent; SignatureOptions.Scoped (carddrift
// --trust FILE) holds keys trusted for one agent origin each. A key fetched
// from the jku a signature names is the signer's own claim: the signature is
// checked with it and recorded (source "jku"), but it is never trust.

// TrustedKeys is one key set the operator trusts for card signatures: a
// static set (a JWKS file, or keys written inline), the key set at a URL
// (fetched through the Fetcher — SSRF guard, timeouts — and cached by
// Cache-Control like a jku's), or both. The zero value trusts nothing.
type TrustedKeys struct {
	// Keys is a static key set (signature.ParseJWKS), nil for none.
	Keys signature.Keys
	// URL is the http or https URL of a key set, "" for none.
	URL string
}

// ErrNotOrigin is returned (wrapped) by ParseOrigin for a string that is not
// an agent origin, and by SignatureOptions validation for a Scoped key that
// is not one in normal form.
var ErrNotOrigin = errors.New("not an agent origin (scheme://host[:port])")

// Origin returns the origin of the http or https URL raw — scheme://host[:port]
// with scheme and host lower-cased, the default port (80 for http, 443 for
// https) left out and an IPv6 host in brackets — whatever its path, query
// or fragment. It fails with a *FetchError of ReasonInvalidURL when raw is not
// an absolute http or https URL with a host.
func Origin(raw string) (string, error) {
	u, err := parseHTTPURL(raw)
	if err != nil {
		return "", err
	}
	return u.Scheme + "://" + canonicalHost(u), nil
}

// ParseOrigin reads an agent origin as an operator writes one
// ("https://Agent.example:443/" and "https://agent.example" are one origin)
// and returns it as Origin normalises it. It fails with an error wrapping
// ErrNotOrigin when s is not an http or https URL with a host, or names more
// than an origin: user info, a path other than "/", a query or a fragment.
func ParseOrigin(s string) (string, error) {
	u, err := parseHTTPURL(s)
	if err != nil {
		return "", fmt.Errorf("%w: %q", ErrNotOrigin, s)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery ||
		u.Fragment != "" || strings.Contains(s, "#") {
		return "", fmt.Errorf("%w: %q names more than scheme://host[:port]", ErrNotOrigin, s)
	}
	if p := u.Port(); p == "" && strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("%w: %q has an empty port", ErrNotOrigin, s)
	}
	return u.Scheme + "://" + canonicalHost(u), nil
}

// validate reports what is wrong with k, for the trusted keys of what.
func (k TrustedKeys) validate(what string) error {
	if k.Keys == nil && k.URL == "" {
		return fmt.Errorf("fetcher: %s: neither Keys nor URL", what)
	}
	if k.URL != "" {
		if _, err := parseHTTPURL(k.URL); err != nil {
			return fmt.Errorf("fetcher: %s: URL: %w", what, err)
		}
	}
	return nil
}

// unionKeys answers a kid with the keys every one of its sets holds for it,
// each key once (by thumbprint). It fails only when none was found and a set
// that could have held one failed.
type unionKeys []signature.Keys

func (ks unionKeys) Lookup(ctx context.Context, kid, jku string) ([]signature.Key, error) {
	var out []signature.Key
	var errs []error
	for _, k := range ks {
		keys, err := k.Lookup(ctx, kid, jku)
		for _, key := range keys {
			if !slices.ContainsFunc(out, func(k signature.Key) bool { return k.Thumbprint == key.Thumbprint }) {
				out = append(out, key)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	return nil, errors.Join(errs...)
}

// keySources returns the signature.Keys of an agent trusted with trusted
// (its own scoped sets and every agent's), and following jku under policy.
func keySources(j *JWKS, policy JKUPolicy, trusted []signature.Keys) signature.Keys {
	src := signature.Sources{}
	switch len(trusted) {
	case 0:
	case 1:
		src.Trusted = trusted[0]
	default:
		src.Trusted = unionKeys(trusted)
	}
	if policy != JKUOff {
		src.JKU = j
		src.AllowJKU = func(jku string) bool {
			l := strings.ToLower(jku)
			return strings.HasPrefix(l, "https://") || policy == JKUAny && strings.HasPrefix(l, "http://")
		}
	}
	return src
}

// asKeys returns the signature.Keys of k, fetched through j for a URL.
func (k TrustedKeys) asKeys(j *JWKS) []signature.Keys {
	var out []signature.Keys
	if k.Keys != nil {
		out = append(out, k.Keys)
	}
	if k.URL != "" {
		out = append(out, j.URL(k.URL))
	}
	return out
}
