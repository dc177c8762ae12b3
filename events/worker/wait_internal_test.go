package worker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/carddrift/carddrift/events/task"
)

// TestAwaitPin: an event that waits for its task's pin is NAKed with the
// wait's delay, and acknowledged as no-pin from the delivery before the
// MaxDeliver-th on (never dead-lettered); anything else passes through.
func TestAwaitPin(t *testing.T) {
	js, cfg := provisioned(t)
	wait := waitError{delay: 4 * time.Second}
	cases := []struct {
		name       string
		maxDeliver int
		delivered  uint64
		h          *results
		want       []string
		outcome    string
		err        error
	}{
		{"first delivery", 10, 1, handled("", wait), []string{"nak 4s"}, outcomeWaiting, nil},
		{"two before MaxDeliver", 10, 8, handled("", wait), []string{"nak 4s"}, outcomeWaiting, nil},
		{"the delivery before MaxDeliver", 10, 9, handled("", wait), []string{"ack"}, task.OutcomeNoPin, nil},
		{"the MaxDeliver-th", 10, 10, handled("", wait), []string{"ack"}, task.OutcomeNoPin, nil},
		{"MaxDeliver unlimited", -1, 100, handled("", wait), []string{"nak 4s"}, outcomeWaiting, nil},
		{"MaxDeliver 1", 1, 1, handled("", wait), []string{"ack"}, task.OutcomeNoPin, nil},
		{"handled", 10, 1, handled(task.OutcomeDrift, nil), nil, task.OutcomeDrift, nil},
		{"another failure", 10, 9, handled("", errStore), nil, "", errStore},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := deliveryOf(msgs[i], c.delivered)
			outcome, err := awaitPin(c.maxDeliver)(c.h.handle)(context.Background(), d)
			if outcome != c.outcome || !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
				t.Errorf("awaitPin = %q, %v; want %q, %v", outcome, err, c.outcome, c.err)
			}
			if got := msgs[i].log(); !slices.Equal(got, c.want) {
				t.Errorf("message calls = %q, want %q", got, c.want)
			}
		})
	}
}
