package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/carddrift/carddrift/detector/jcs"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/store/fetcher"
)

// trustFlags say which keys verify card signatures (serve and pin).
type trustFlags struct {
	jwks  string
	trust string
	jku   string
}

func (t *trustFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.jwks, "jwks", "", "keys you trust for every agent's card signatures: a JWKS file, or an http(s) URL of one "+
		"(fetched through the SSRF guard, cached by Cache-Control)")
	fs.StringVar(&t.trust, "trust", "", `keys you trust per agent: a JSON file mapping an agent origin (scheme://host[:port]) to `+
		`{"jwks": FILE|URL} or {"keys": [JWK, …]}; a FILE is relative to the trust file`)
	fs.StringVar(&t.jku, "jku", string(fetcher.JKUHTTPS), "follow the key set URL (jku) a card's signature names: "+
		"https, any (http too: loopback labs) or off. A jku key is the signer's claim, recorded, never trust")
}

// Bounds of the files the trust flags read.
const (
	maxJWKSFileBytes  = 1 << 20 // a --jwks file, and each a --trust file names
	maxTrustFileBytes = 1 << 20
	maxTrustOrigins   = 4096
	maxTrustJWKSBytes = 16 << 20 // the JWKS files a --trust file names, together
)

// Errors of a --trust file, each wrapped in a *trustError; errTrustDuplicate
// is two spellings of one origin.
var (
	errTrustSyntax    = errors.New("not a JSON object of agent origins")
	errTrustEntry     = errors.New(`want {"jwks": FILE|URL} or {"keys": [JWK, …]}`)
	errTrustNoKeys    = errors.New("no key that can verify signatures")
	errTrustDuplicate = errors.New("the same origin twice")
	errTrustTooLarge  = errors.New("too large")
)

// trustError is what is wrong with a --trust file: Origin is the entry (""
// for the file as a whole).
type trustError struct {
	File, Origin string
	Err          error
}

func (e *trustError) Error() string {
	if e.Origin == "" {
		return fmt.Sprintf("--trust %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("--trust %s: %q: %v", e.File, e.Origin, e.Err)
}

func (e *trustError) Unwrap() error { return e.Err }

// options reads the flags into the fetcher's signature options. skipped
// lists the keys that cannot verify signatures.
func (t *trustFlags) options() (o fetcher.SignatureOptions, skipped []error, err error) {
	jku, err := fetcher.ParseJKUPolicy(t.jku)
	if err != nil {
		return o, nil, usagef("--jku %q: want https, any or off", t.jku)
	}
	o.JKU = jku
	if t.jwks != "" {
		k, skip, err := jwksSource(t.jwks, func(path string) ([]byte, error) { return readBounded(path, maxJWKSFileBytes) })
		if err != nil {
			return o, nil, usageError{fmt.Errorf("--jwks %s: %w", t.jwks, err)}
		}
		o.Trusted, o.TrustedURL, skipped = k.Keys, k.URL, skip
	}
	if t.trust != "" {
		b, err := readBounded(t.trust, maxTrustFileBytes)
		if err != nil {
			return o, nil, usageError{&trustError{File: t.trust, Err: err}}
		}
		dir := filepath.Dir(t.trust)
		budget := int64(maxTrustJWKSBytes) // what the JWKS files may still take
		read := func(path string) ([]byte, error) {
			if !filepath.IsAbs(path) {
				path = filepath.Join(dir, path)
			}
			b, err := readBounded(path, min(budget, maxJWKSFileBytes))
			if budget < maxJWKSFileBytes && errors.Is(err, errTrustTooLarge) {
				err = fmt.Errorf("%w: the JWKS files it names are larger than %d bytes together", errTrustTooLarge, maxTrustJWKSBytes)
			}
			budget -= int64(len(b))
			return b, err
		}
		scoped, skip, err := parseTrust(b, read)
		if err != nil {
			if te := (*trustError)(nil); errors.As(err, &te) {
				te.File = t.trust
			}
			return o, nil, usageError{err}
		}
		o.Scoped, skipped = scoped, append(skipped, skip...)
	}
	return o, skipped, nil
}

// parseTrust reads a --trust file: a JSON object mapping agent origins to
// the keys trusted for them,
//
//	{
//	  "https://ledger.example":    {"jwks": "keys/ledger.json"},
//	  "https://maps.example:8443": {"jwks": "https://maps.example/.well-known/jwks.json"},
//	  "http://127.0.0.1:41241":    {"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "x": "…", "y": "…"}]}
//	}
//
// An origin is fetcher.ParseOrigin's; "jwks" is an http(s) URL of a key
// set or a JWKS file, which read returns. Every error is a *trustError.
func parseTrust(b []byte, read func(path string) ([]byte, error)) (map[string]fetcher.TrustedKeys, []error, error) {
	fail := func(origin string, err error) (map[string]fetcher.TrustedKeys, []error, error) {
		return nil, nil, &trustError{Origin: origin, Err: err}
	}
	if len(b) > maxTrustFileBytes {
		return fail("", fmt.Errorf("%w: larger than %d bytes", errTrustTooLarge, maxTrustFileBytes))
	}
	v, err := jcs.ParseObject(b, jcs.Limits{MaxBytes: maxTrustFileBytes})
	if err != nil {
		return fail("", fmt.Errorf("%w: %w", errTrustSyntax, err))
	}
	if len(v.Members) > maxTrustOrigins {
		return fail("", fmt.Errorf("%w: %d origins, at most %d", errTrustTooLarge, len(v.Members), maxTrustOrigins))
	}
	out := make(map[string]fetcher.TrustedKeys, len(v.Members))
	var skipped []error
	for i := range v.Members {
		m := &v.Members[i]
		origin, err := fetcher.ParseOrigin(m.Key)
		if err != nil {
			return fail(m.Key, err)
		}
		if _, dup := out[origin]; dup {
			return fail(m.Key, fmt.Errorf("%w: %s", errTrustDuplicate, origin))
		}
		k, skip, err := trustEntry(&m.Value, read)
		if err != nil {
			return fail(m.Key, err)
		}
		for _, s := range skip {
			skipped = append(skipped, fmt.Errorf("--trust %q: %w", origin, s))
		}
		out[origin] = k
	}
	return out, skipped, nil
}

func trustEntry(v *jcs.Value, read func(string) ([]byte, error)) (fetcher.TrustedKeys, []error, error) {
	if v.Kind != jcs.Object {
		return fetcher.TrustedKeys{}, nil, fmt.Errorf("%w: a JSON %s", errTrustEntry, v.Kind)
	}
	if len(v.Members) != 1 {
		return fetcher.TrustedKeys{}, nil, fmt.Errorf("%w: %d members", errTrustEntry, len(v.Members))
	}
	m := &v.Members[0]
	switch {
	case m.Key == "jwks" && m.Value.Kind == jcs.String && m.Value.Str != "":
		k, skip, err := jwksSource(m.Value.Str, read)
		if err != nil {
			return k, nil, fmt.Errorf("jwks %s: %w", m.Value.Str, err)
		}
		return k, skip, nil
	case m.Key == "keys" && m.Value.Kind == jcs.Array:
		set, err := keySet(append(jcs.Append([]byte(`{"keys":`), &m.Value), '}'))
		if err != nil {
			return fetcher.TrustedKeys{}, nil, fmt.Errorf("keys: %w", err)
		}
		return fetcher.TrustedKeys{Keys: set}, set.Skipped(), nil
	}
	return fetcher.TrustedKeys{}, nil, fmt.Errorf("%w: %q", errTrustEntry, m.Key)
}

// jwksSource reads the keys of src, an http(s) URL of a key set or a JWKS
// file, which read returns.
func jwksSource(src string, read func(string) ([]byte, error)) (fetcher.TrustedKeys, []error, error) {
	if isHTTPURL(src) {
		_, err := fetcher.CanonicalURL(src)
		return fetcher.TrustedKeys{URL: src}, nil, err
	}
	b, err := read(src)
	if err != nil {
		return fetcher.TrustedKeys{}, nil, err
	}
	set, err := keySet(b)
	if err != nil {
		return fetcher.TrustedKeys{}, nil, err
	}
	return fetcher.TrustedKeys{Keys: set}, set.Skipped(), nil
}

// keySet parses a JWKS that must hold at least one usable key.
func keySet(b []byte) (*signature.KeySet, error) {
	set, err := signature.ParseJWKS(b)
	if err != nil {
		return nil, err
	}
	if len(set.Keys()) == 0 {
		return nil, fmt.Errorf("%w: %w", errTrustNoKeys, errors.Join(set.Skipped()...))
	}
	return set, nil
}

func isHTTPURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// readBounded reads path, failing with errTrustTooLarge past limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, errTrustTooLarge, limit)
	}
	return b, nil
}
