package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events/internal/wait"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

// Errors of Open (wrapped): no usable deployment within SetupTimeout; a
// request the stores need refused.
var (
	ErrStartupTimeout = errors.New("service: start-up timed out")
	ErrPermission     = errors.New("service: permission refused")
)

// attemptTimeout bounds one attempt to provision or bind the stores.
const attemptTimeout = 10 * time.Second

// setupStores provisions or binds the stores, retrying with backoff while
// the deployment is still forming (store.Waiting); r and log say what for.
func setupStores(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, cfg store.Config, bind bool, r *Readiness, log zerolog.Logger) (*store.Stores[task.Pin], error) {
	what, op := "provision streams and buckets", store.Open[task.Pin]
	if bind {
		what, op = "bind streams and buckets", store.Bind[task.Pin]
	}
	start := time.Now()
	backoff := wait.Backoff{Base: 250 * time.Millisecond, Max: 10 * time.Second}
	var waitingFor string
	for attempt := 1; ; attempt++ {
		var err error
		if nc.IsConnected() {
			actx, cancel := context.WithTimeout(ctx, attemptTimeout)
			stopWatch := cancelOnPermission(actx, nc, cancel)
			var st *store.Stores[task.Pin]
			st, err = op(actx, js, cfg)
			stopWatch()
			cancel()
			if err == nil {
				if attempt > 1 {
					log.Info().Int("attempts", attempt).Dur("after", time.Since(start).Round(time.Millisecond)).Msg("start-up: " + what + ": done")
				}
				return st, nil
			}
		} else {
			err = notConnected(nc)
		}
		if ctx.Err() != nil {
			return nil, ended(ctx, what, start, waitingFor, err)
		}
		if perr := nc.LastError(); errors.Is(perr, nats.ErrPermissionViolation) {
			// The server drops a request its sender may not publish and says
			// so on the connection; the request itself only times out.
			return nil, fmt.Errorf("%s: %w: %w (last attempt: %w)", what, ErrPermission, perr, err)
		}
		reason := store.Waiting(err)
		if reason == "" {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if reason != waitingFor {
			waitingFor = reason
			r.waitFor("waiting for " + reason)
			log.Warn().Err(err).Str("waitingFor", reason).Int("attempt", attempt).Msg("start-up: " + what + ": waiting for " + reason)
		}
		if pause(ctx, nc, backoff.Next()) != nil {
			return nil, ended(ctx, what, start, waitingFor, err)
		}
	}
}

// pause waits d, or less when nc connects meanwhile.
func pause(ctx context.Context, nc *nats.Conn, d time.Duration) error {
	if nc.IsConnected() {
		return wait.Sleep(ctx, d)
	}
	connected := nc.StatusChanged(nats.CONNECTED)
	defer nc.RemoveStatusListener(connected)
	if nc.IsConnected() {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-connected:
	case <-ctx.Done():
	}
	return ctx.Err()
}

func ended(ctx context.Context, what string, start time.Time, waitingFor string, last error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w after %v, still waiting for %s: %w", what, ErrStartupTimeout,
			time.Since(start).Round(time.Second), cmp.Or(waitingFor, "an answer"), last)
	}
	return fmt.Errorf("%s: %w", what, ctx.Err())
}

// permissionPoll is how often an attempt looks for a refused permission.
const permissionPoll = 50 * time.Millisecond

// cancelOnPermission cancels an attempt when the server reports a
// permission violation on nc; stop ends the watch and waits for it.
func cancelOnPermission(ctx context.Context, nc *nats.Conn, cancel context.CancelFunc) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(permissionPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if errors.Is(nc.LastError(), nats.ErrPermissionViolation) {
					cancel()
					return
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}

// notConnected is the error of an attempt made while nc has no server.
func notConnected(nc *nats.Conn) error {
	base := nats.ErrConnectionReconnecting
	if nc.IsClosed() {
		base = nats.ErrConnectionClosed
	}
	if last := nc.LastError(); last != nil {
		return fmt.Errorf("%w (last error: %w)", base, last)
	}
	return base
}
