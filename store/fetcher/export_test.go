package fetcher

import (
	"context"
	"slices"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
)

// The accessors only this package's tests use.

// Verify is VerifyAt for a card served from no agent in particular (a file).
func (f *Fetcher) Verify(ctx context.Context, raw []byte) []detector.Signature {
	return f.VerifyAt(ctx, "", raw)
}

// Len returns how many verification outcomes are kept, and the bytes they
// retain (as SignatureOptions.CacheBytes counts them).
func (v *verifier) Len() (n int, bytes int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.results.len(), v.results.size()
}

// Get returns the key set at url, from the cache while it is fresh, else
// fetched.
func (j *JWKS) Get(ctx context.Context, url string) (*signature.KeySet, error) {
	e, err := j.get(ctx, url, false)
	if err != nil {
		return nil, err
	}
	return e.set, nil
}

// Len returns the number of key set URLs cached (sets and failures).
func (j *JWKS) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := j.sets.len()
	for _, e := range j.fixed {
		if e != nil {
			n++
		}
	}
	return n
}

// Bytes returns what the cached jku key sets are counted at against
// MaxBytes.
func (j *JWKS) Bytes() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.sets.size()
}

// Headers returns the headers the credential sends (a copy).
func (c Credential) Headers() []Header { return slices.Clone(c.headers) }

// HasCertificate reports a client-certificate credential.
func (c Credential) HasCertificate() bool { return c.cert != nil }
