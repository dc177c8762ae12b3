package worker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events/task"
)

// TestRedeliver: any failure that reaches redeliver is NAKed with the
// growing delay of redelivery (2 s on a first delivery), logged and counted
// as retry; a settled event passes through untouched. Nothing leaves it
// with an error.
func TestRedeliver(t *testing.T) {
	js, cfg := provisioned(t)
	nak := "nak " + (2 * time.Second).String()
	cases := []struct {
		name    string
		h       *results
		want    []string
		outcome string
		logged  bool
	}{
		{"transient", handled("", errStore), []string{nak}, outcomeRetry, true},
		{"unclassified", handled("", errOther), []string{nak}, outcomeRetry, true},
		{"permanent (not dead-lettered inside)", handled("", errCorrupt), []string{nak}, outcomeRetry, true},
		{"settled inside", handled(task.OutcomeDrift, nil), nil, task.OutcomeDrift, false},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs strings.Builder
			outcome, err := redeliver(zerolog.New(&logs))(c.h.handle)(context.Background(), deliveryOf(msgs[i], 1))
			if outcome != c.outcome || err != nil {
				t.Errorf("redeliver = %q, %v; want %q, nil", outcome, err, c.outcome)
			}
			if got := msgs[i].log(); !slices.Equal(got, c.want) {
				t.Errorf("message calls = %q, want %q", got, c.want)
			}
			if got := strings.Contains(logs.String(), "event failed; will retry"); got != c.logged {
				t.Errorf("logged the failure: %v, want %v (%s)", got, c.logged, logs.String())
			}
		})
	}
}
