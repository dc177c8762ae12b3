package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events/internal/wait"
	"github.com/carddrift/carddrift/store"
)

// noSpaceError is a write the store refused for lack of space
// (store.NoSpace) that was still refused when the handling's context
// ended. poison does not dead-letter it on any delivery: the event is
// redelivered (redeliver), and written once space returns.
type noSpaceError struct {
	reason string
	err    error
}

func (e noSpaceError) Error() string { return e.reason + ": " + e.err.Error() }
func (e noSpaceError) Unwrap() error { return e.err }

// Backoff of writes refused for lack of space: from noSpaceBase, doubling,
// at most noSpaceMax between two probes of the store.
const (
	noSpaceBase = 250 * time.Millisecond
	noSpaceMax  = 15 * time.Second
)

// space is what the worker knows of the store's room: whether its last
// write was refused for lack of space, why, and the events it holds
// meanwhile. While the store is full one held event at a time tries its
// writes again (the probe), after a backoff that grows while the store
// stays full; the others wait for it. The first write the store takes
// again lets every held event through.
type space struct {
	log zerolog.Logger
	m   *Metrics

	mu      sync.Mutex
	reason  string        // "" while the store takes writes
	since   time.Time     // when it first refused
	clear   chan struct{} // closed when the store takes writes again
	held    int           // events held for space
	backoff wait.Backoff

	probe chan struct{} // the one attempt allowed while full (capacity 1)
}

func newSpace(log zerolog.Logger, m *Metrics) *space {
	return &space{log: log, m: m, probe: make(chan struct{}, 1),
		backoff: wait.Backoff{Base: noSpaceBase, Max: noSpaceMax}}
}

// NoSpace returns why the worker holds events the store refused to write
// for lack of space ("store full: server storage full, 3 events waiting
// since 12:00:01"), or "" when the store takes its writes.
func (w *Worker) NoSpace() string {
	s := w.space
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason == "" {
		return ""
	}
	return fmt.Sprintf("store full: %s; %d events waiting to be written since %s", s.reason, s.held, s.since.UTC().Format(time.TimeOnly))
}

// turn waits until the event may try its writes: at once while the store
// takes writes; while it is full, when the probe is free (release frees
// it) or the store takes writes again.
func (s *space) turn(ctx context.Context) (release func(), err error) {
	for {
		s.mu.Lock()
		full, clear := s.reason != "", s.clear
		s.mu.Unlock()
		if !full {
			return func() {}, nil
		}
		select {
		case s.probe <- struct{}{}:
			return func() { <-s.probe }, nil
		case <-clear:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// refused records a write refused for lack of space and returns how long
// to wait before the next probe. It logs when the store becomes full or
// the reason changes.
func (s *space) refused(reason string, err error) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.refused(reason)
	if s.reason != reason {
		if s.reason == "" {
			s.since = time.Now()
			s.clear = make(chan struct{})
			s.backoff.Reset()
		}
		s.reason = reason
		s.log.Warn().Err(err).Str("reason", reason).
			Msg("the store refuses writes for lack of space; holding the events unacknowledged until it takes them")
	}
	return s.backoff.Next()
}

// took records a handling that succeeded: the store takes writes (again).
func (s *space) took() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason == "" {
		return
	}
	s.log.Info().Str("reason", s.reason).Dur("after", time.Since(s.since).Round(time.Millisecond)).Int("held", s.held).
		Msg("the store takes writes again; writing the held events")
	s.reason = ""
	close(s.clear)
}

// hold counts an event held for space (n: +1 or -1).
func (s *space) hold(n int) {
	s.mu.Lock()
	s.held += n
	s.mu.Unlock()
	s.m.waitingForSpace(n)
}

// noSpace keeps an event whose write the store refused for lack of space
// (store.NoSpace: the server's storage used up, the account's limit, a
// stream at its limit) in process: it is handled again, one held event at
// a time probing the store after a growing backoff (space), until a write
// succeeds — never NAKed, terminated or dead-lettered for it, its
// keepAlive running (it is inside inProgress). If the handling's context
// ends first (a drain timed out), the failure goes up as a noSpaceError,
// which poison leaves alone and redeliver NAKs. Every other outcome goes
// up as it is.
func noSpace(s *space) middleware {
	return func(h handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivered) (string, error) {
			held := false
			defer func() {
				if held {
					s.hold(-1)
				}
			}()
			for {
				release, err := s.turn(ctx)
				if err != nil {
					return "", noSpaceError{reason: "store full", err: err}
				}
				outcome, err := h(ctx, d)
				reason := store.NoSpace(err)
				if reason == "" {
					if err == nil {
						s.took()
					}
					release()
					return outcome, err
				}
				if !held {
					held = true
					s.hold(1)
				}
				delay := s.refused(reason, err)
				serr := wait.Sleep(ctx, delay)
				release()
				if serr != nil {
					return outcome, noSpaceError{reason: reason, err: err}
				}
			}
		}
	}
}
