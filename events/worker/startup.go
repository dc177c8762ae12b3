package worker

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/internal/wait"
	"github.com/carddrift/carddrift/store"
)

// consumerAttemptTimeout bounds one attempt to create a consumer.
const consumerAttemptTimeout = 20 * time.Second

// createConsumer creates (or updates) a partition's consumer, trying again
// while the deployment is still forming (store.Waiting: no answer, no
// leader, too few servers for the replicas), with a jittered backoff of at
// most 10s, until ctx ends. It logs what it waits for once each time that
// changes. Any other error is returned at once.
func (w *Worker) createConsumer(ctx context.Context, cc jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	backoff := wait.Backoff{Base: 250 * time.Millisecond, Max: 10 * time.Second}
	var waitingFor string
	for {
		actx, cancel := context.WithTimeout(ctx, consumerAttemptTimeout)
		cons, err := w.js.CreateOrUpdateConsumer(actx, w.cfg.LifecycleStream, cc)
		cancel()
		if err == nil || ctx.Err() != nil {
			return cons, err
		}
		reason := store.Waiting(err)
		if reason == "" {
			return nil, err
		}
		if reason != waitingFor {
			waitingFor = reason
			w.log.Warn().Err(err).Str("consumer", cc.Durable).Str("waitingFor", reason).Msg("start-up: create consumer: waiting for " + reason)
		}
		if wait.Sleep(ctx, backoff.Next()) != nil {
			return nil, err
		}
	}
}
