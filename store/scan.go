package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Scan implements Scanner. It reads every value of the bucket with one KV watch of all keys (an
// ordered consumer that delivers the latest value of each key, deletes
// skipped, then a nil marker) and decodes them on a bounded pool of
// goroutines; fn runs on the caller's goroutine.
func (s *kvJSON[T]) Scan(ctx context.Context, fn func(T, uint64) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil
		}
		return fmt.Errorf("store: scan %s bucket: %w", s.kv.Bucket(), err)
	}
	defer w.Stop()

	type decoded struct {
		v       T
		rev     uint64
		corrupt bool
	}
	entries := make(chan jetstream.KeyValueEntry, 256)
	out := make(chan decoded, 256)
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range entries {
				var d decoded
				d.rev = e.Revision()
				if err := json.Unmarshal(e.Value(), &d.v); err != nil {
					d.corrupt = true
				}
				select {
				case out <- d:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	// The reader owns entries; it stops at the end of the initial values,
	// or when ctx ends (the workers then stop too, and out is closed).
	readErr := make(chan error, 1)
	go func() {
		defer func() { close(entries); wg.Wait(); close(out) }()
		for {
			select {
			case <-ctx.Done():
				readErr <- ctx.Err()
				return
			case e, ok := <-w.Updates():
				if !ok {
					readErr <- ErrWatchClosed
					return
				}
				if e == nil {
					readErr <- nil
					return
				}
				select {
				case entries <- e:
				case <-ctx.Done():
					readErr <- ctx.Err()
					return
				}
			}
		}
	}()
	corrupt := 0
	var fnErr error
	for d := range out {
		if fnErr != nil {
			continue
		}
		if d.corrupt {
			corrupt++
			continue
		}
		if err := fn(d.v, d.rev); err != nil {
			fnErr = err
			cancel()
		}
	}
	if fnErr != nil {
		return fnErr
	}
	if err := <-readErr; err != nil {
		return fmt.Errorf("store: scan %s bucket: %w", s.kv.Bucket(), err)
	}
	if corrupt > 0 {
		return fmt.Errorf("store: scan %s bucket: %d value(s) skipped: %w", s.kv.Bucket(), corrupt, ErrCorrupt)
	}
	return nil
}
