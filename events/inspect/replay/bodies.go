package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/store"
)

// The Reader's caches of parsed bodies and changes are bounded; a full
// cache drops one entry for each new one rather than start over.
const (
	maxBodies  = 256
	maxChanges = 4096
)

// bounded adds k → v to m, dropping an entry (any) when m holds max.
func bounded[K comparable, V any](m map[K]V, max int, k K, v V) {
	if _, ok := m[k]; !ok && len(m) >= max {
		for old := range m {
			delete(m, old)
			break
		}
	}
	m[k] = v
}

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
	raw, err := r.opts.Cards.Get(ctx, digest)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidDigest):
		b.missing = true
	case err != nil:
		return nil, fmt.Errorf("replay: card %s: %w", digest, err)
	default:
		b.card, b.err = detector.Parse(raw)
	}
	r.mu.Lock()
	bounded(r.bodies, maxBodies, digest, b)
	r.mu.Unlock()
	return b, nil
}

// change diffs two recorded card versions. The outcome is cached by the
// pair, so a pair seen before reads no body.
func (r *Reader) change(ctx context.Context, from, to string) (*Change, error) {
	key := [2]string{from, to}
	r.mu.Lock()
	c, ok := r.changes[key]
	r.mu.Unlock()
	if !ok {
		var err error
		if c, err = r.diff(ctx, from, to); err != nil {
			return nil, err
		}
		r.mu.Lock()
		bounded(r.changes, maxChanges, key, c)
		r.mu.Unlock()
	}
	c.Findings, c.Missing = slices.Clone(c.Findings), slices.Clone(c.Missing)
	return &c, nil
}

// diff is what changed from the recorded body of from to that of to.
func (r *Reader) diff(ctx context.Context, from, to string) (Change, error) {
	c := Change{From: from, To: to, Findings: []detector.Finding{}}
	a, err := r.body(ctx, from)
	if err != nil {
		return Change{}, err
	}
	b, err := r.body(ctx, to)
	if err != nil {
		return Change{}, err
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
	if fs := detector.Diff(a.card, b.card); fs != nil {
		c.Findings = fs
	}
	return c, nil
}
