package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/store"
)

// The Reader's caches of parsed bodies and diffs are bounded: a stream
// over a long history meets ever more card versions.
const (
	maxBodies = 256
	maxDiffs  = 4096
)

// body returns the parsed recorded body of digest, from the Cards store
// (never from the agent). A missing or unparseable body is reported in the
// result, not as an error; errors are the store's.
func (r *Reader) body(ctx context.Context, digest string) (*body, error) {
	r.mu.Lock()
	b, ok := r.bodies[digest]
	r.mu.Unlock()
	if ok {
		return b, nil
	}
	b = &body{}
	raw, err := r.cards.Get(ctx, digest)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidDigest):
		b.missing = true
	case err != nil:
		return nil, fmt.Errorf("replay: card %s: %w", digest, err)
	default:
		if b.card, err = detector.Parse(raw); err != nil {
			b.err = err
		}
	}
	r.mu.Lock()
	if len(r.bodies) >= maxBodies {
		clear(r.bodies) // a bound, not a history: start over
	}
	r.bodies[digest] = b
	r.mu.Unlock()
	return b, nil
}

// change diffs two recorded card versions.
func (r *Reader) change(ctx context.Context, from, to string) (*Change, error) {
	c := &Change{From: from, To: to, Findings: []detector.Finding{}}
	a, err := r.body(ctx, from)
	if err != nil {
		return nil, err
	}
	b, err := r.body(ctx, to)
	if err != nil {
		return nil, err
	}
	for _, x := range []struct {
		digest string
		b      *body
	}{{from, a}, {to, b}} {
		switch {
		case x.b.missing:
			c.Missing = append(c.Missing, x.digest)
		case x.b.err != nil:
			c.Error = fmt.Sprintf("recorded body of %s does not parse: %v", x.digest, x.b.err)
		}
	}
	if len(c.Missing) > 0 || c.Error != "" {
		return c, nil
	}
	key := [2]string{from, to}
	r.mu.Lock()
	fs, ok := r.diffs[key]
	r.mu.Unlock()
	if !ok {
		fs = detector.Diff(a.card, b.card)
		if fs == nil {
			fs = []detector.Finding{}
		}
		r.mu.Lock()
		if len(r.diffs) >= maxDiffs {
			clear(r.diffs)
		}
		r.diffs[key] = fs
		r.mu.Unlock()
	}
	c.Findings = slices.Clone(fs)
	return c, nil
}
