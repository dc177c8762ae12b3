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

// scanBatch is how many values Scan decodes at once.
const scanBatch = 256

// Scan implements Scanner. It reads every value of the bucket with one KV
// watch of all keys (an ordered consumer that delivers the latest value of
// each key, deletes skipped, then a nil marker) and decodes them a batch at
// a time on a bounded pool of goroutines; fn runs on the caller's goroutine.
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

	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	batch := make([]jetstream.KeyValueEntry, 0, scanBatch)
	vals := make([]T, scanBatch)
	bad := make([]bool, scanBatch)
	corrupt := 0
	flush := func() error {
		var wg sync.WaitGroup
		for n := range workers {
			wg.Go(func() {
				for i := n; i < len(batch); i += workers {
					vals[i] = *new(T)
					bad[i] = json.Unmarshal(batch[i].Value(), &vals[i]) != nil
				}
			})
		}
		wg.Wait()
		for i, e := range batch {
			if bad[i] {
				corrupt++
			} else if err := fn(vals[i], e.Revision()); err != nil {
				return err
			}
		}
		batch = batch[:0]
		return nil
	}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: scan %s bucket: %w", s.kv.Bucket(), ctx.Err())
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return fmt.Errorf("store: scan %s bucket: %w", s.kv.Bucket(), ErrWatchClosed)
			case e == nil: // the end of the current values
				done = true
			default:
				batch = append(batch, e)
			}
			if done || len(batch) == scanBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if corrupt > 0 {
		return fmt.Errorf("store: scan %s bucket: %d value(s) skipped: %w", s.kv.Bucket(), corrupt, ErrCorrupt)
	}
	return nil
}
