package worker

import (
	"context"
	"time"
)

// count counts every event the chain settles in carddrift_events_total,
// by type and outcome, and its time from when the worker took it (its wait
// behind its task's earlier events included) in
// carddrift_event_duration_seconds.
func count(m *Metrics) middleware {
	return func(h handlerFunc) handlerFunc {
		return func(ctx context.Context, d *delivered) (string, error) {
			outcome, err := h(ctx, d)
			m.event(d.ev.Type, outcome, time.Since(d.start).Seconds())
			return outcome, err
		}
	}
}
