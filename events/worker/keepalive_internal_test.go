package worker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/natstest"
)

// TestKeepAlive: a kept-alive event is reported in progress every third of
// AckWait until it is stopped, or until the dispatcher abandons its work;
// then no more. (Another event kept alive throughout shows the time that
// passed: three more of its reports, at least two periods.)
func TestKeepAlive(t *testing.T) {
	js, cfg := provisioned(t)
	cases := []struct {
		name string
		end  func(w *Worker, stop func())
	}{
		{"stopped", func(_ *Worker, stop func()) { stop() }},
		{"abandoned", func(w *Worker, _ func()) { w.dispatch.abandon() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs := lifecycleMsgs(t, js, cfg, 2)
			kept, clock := msgs[0], msgs[1]
			fast := cfg
			fast.AckWait = 150 * time.Millisecond
			w := &Worker{cfg: fast, dispatch: newDispatcher(1)}
			stop := w.keepAlive(kept)
			other := &Worker{cfg: w.cfg, dispatch: newDispatcher(1)}
			defer other.keepAlive(clock)()
			natstest.Eventually(t, 10*time.Second, "two reports in progress", func() bool { return kept.inProgress() >= 2 })
			c.end(w, stop)
			n, from := kept.inProgress(), clock.inProgress()
			natstest.Eventually(t, 10*time.Second, "three periods", func() bool { return clock.inProgress() >= from+3 })
			if got := kept.inProgress(); got > n+1 {
				t.Fatalf("%d reports in progress after it ended (%d before), want at most one in flight", got-n, n)
			}
		})
	}
}

// TestInProgress: the keepAlive ends once, when the handling returns,
// failed or not, and before anything settles the event.
func TestInProgress(t *testing.T) {
	js, cfg := provisioned(t)
	cases := []struct {
		name string
		h    *results
		want []string
	}{
		{"handled", handled(task.OutcomeDrift, nil), []string{"handled", "stop", "ack"}},
		{"failed", handled("", errStore), []string{"handled", "stop"}},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := deliveryOf(msgs[i], 1)
			h := func(ctx context.Context, d *delivered) (string, error) {
				msgs[i].record("handled")
				return c.h.handle(ctx, d)
			}
			acknowledge(&acker{})(inProgress(h))(context.Background(), d)
			if got := msgs[i].log(); !slices.Equal(got, c.want) {
				t.Errorf("calls = %q, want %q", got, c.want)
			}
		})
	}
}
