package worker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events/task"
)

// TestAcknowledge: a handled event is acknowledged, with the handler's
// outcome, and a failed acknowledgement is logged; a failure is not
// acknowledged, and passes through.
func TestAcknowledge(t *testing.T) {
	js, cfg := provisioned(t)
	cases := []struct {
		name    string
		acked   bool // acknowledged before: the ack fails
		h       *results
		want    []string
		outcome string
		err     error
		logged  bool
	}{
		{"handled", false, handled(task.OutcomeDrift, nil), []string{"ack"}, task.OutcomeDrift, nil, false},
		{"handled, the ack fails", true, handled(task.OutcomeUnchanged, nil), []string{"ack", "ack"}, task.OutcomeUnchanged, nil, true},
		{"failed", false, handled("", errStore), nil, "", errStore, false},
		{"waiting", false, handled("", waitError{}), nil, "", waitError{}, false},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.acked {
				if err := msgs[i].Ack(); err != nil {
					t.Fatal(err)
				}
			}
			var logs strings.Builder
			outcome, err := acknowledge(&acker{log: zerolog.New(&logs)})(c.h.handle)(context.Background(), deliveryOf(msgs[i], 1))
			if outcome != c.outcome || !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
				t.Errorf("acknowledge = %q, %v; want %q, %v", outcome, err, c.outcome, c.err)
			}
			if got := msgs[i].log(); !slices.Equal(got, c.want) {
				t.Errorf("message calls = %q, want %q", got, c.want)
			}
			if got := strings.Contains(logs.String(), "ack failed"); got != c.logged {
				t.Errorf("logged a failed ack: %v, want %v (%s)", got, c.logged, logs.String())
			}
		})
	}
}
