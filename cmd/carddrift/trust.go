package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/carddrift/carddrift/detector/fetcher"
	"github.com/carddrift/carddrift/detector/signature"
)

// trustFlags say which keys verify card signatures: serve's and pin's
// --jwks and --jku.
type trustFlags struct {
	jwks string
	jku  string
}

func (t *trustFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.jwks, "jwks", "", "keys you trust for card signatures: a JWKS file, or an http(s) URL of one "+
		"(fetched through the SSRF guard, cached by Cache-Control)")
	fs.StringVar(&t.jku, "jku", string(fetcher.JKUHTTPS), "follow the key set URL (jku) a card's signature names: "+
		"https, any (http too: loopback labs) or off (only --jwks keys verify)")
}

// maxJWKSFileBytes bounds a --jwks file.
const maxJWKSFileBytes = 1 << 20

// options reads the flags into the fetcher's signature options. skipped
// lists the keys of a --jwks file that cannot verify signatures (for the
// operator's log).
func (t *trustFlags) options() (o fetcher.SignatureOptions, skipped []error, err error) {
	jku, err := fetcher.ParseJKUPolicy(t.jku)
	if err != nil {
		return o, nil, usagef("--jku %q: want https, any or off", t.jku)
	}
	o.JKU = jku
	switch src := t.jwks; {
	case src == "":
	case strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://"):
		o.TrustedURL = src
	default:
		f, err := os.Open(src)
		if err != nil {
			return o, nil, usageError{fmt.Errorf("--jwks: %w", err)}
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxJWKSFileBytes+1))
		if err != nil {
			return o, nil, fmt.Errorf("--jwks: %w", err)
		}
		if len(b) > maxJWKSFileBytes {
			return o, nil, usagef("--jwks %s: larger than %d bytes", src, maxJWKSFileBytes)
		}
		set, err := signature.ParseJWKS(b)
		if err != nil {
			return o, nil, usageError{fmt.Errorf("--jwks %s: %w", src, err)}
		}
		if len(set.Keys()) == 0 {
			return o, nil, usageError{fmt.Errorf("--jwks %s: no key that can verify signatures: %w", src, errors.Join(set.Skipped()...))}
		}
		o.Trusted, skipped = set, set.Skipped()
	}
	return o, skipped, nil
}
