package service

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Backlog returns how many messages the durable consumers of stream have
// not had acknowledged yet, summed.
func Backlog(ctx context.Context, js jetstream.JetStream, stream string, durables ...string) (uint64, error) {
	var n uint64
	for _, d := range durables {
		c, err := js.Consumer(ctx, stream, d)
		if err != nil {
			return 0, fmt.Errorf("consumer %s: %w", d, err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			return 0, fmt.Errorf("consumer %s: %w", d, err)
		}
		n += info.NumPending + uint64(info.NumAckPending)
	}
	return n, nil
}

// WaitDrained polls Backlog until it is zero, or returns an error naming
// the last backlog when ctx is done.
func WaitDrained(ctx context.Context, js jetstream.JetStream, stream string, durables []string, poll time.Duration) error {
	for {
		n, err := Backlog(ctx, js, stream, durables...)
		if err == nil && n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("%s not drained: %w (%w)", stream, err, ctx.Err())
			}
			return fmt.Errorf("%s not drained: backlog %d (%w)", stream, n, ctx.Err())
		case <-time.After(max(poll, time.Millisecond)):
		}
	}
}

// WaitDrained is WaitDrained for the workers' lifecycle consumers.
func (s *Service) WaitDrained(ctx context.Context) error {
	return WaitDrained(ctx, s.js, s.cfg.LifecycleStream, s.cfg.ConsumerNames(), 20*time.Millisecond)
}
