package worker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events"
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

// TestAcker: the acker acknowledges an event once the card event it waits
// for is stored, NAKs (for redelivery) one whose publish failed, and
// acknowledges one that waits for nothing; a drain settles all it holds.
func TestAcker(t *testing.T) {
	js, cfg := provisioned(t)
	msgs := lifecycleMsgs(t, js, cfg, 3)
	stored, err := js.PublishMsgAsync(&nats.Msg{Subject: "card.pinned.agent.t1", Data: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := js.PublishMsgAsync(&nats.Msg{Subject: "no-stream.t1", Data: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(nil)
	a := &acker{log: zerolog.Nop(), m: m, timeout: 5 * time.Second, in: make(chan pendingAck, ackBuffer)}
	drain, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		a.run(drain, nil)
	}()
	a.ack(msgs[0], []published{{typ: events.TypePinned, ack: stored}})
	a.ack(msgs[1], []published{{typ: events.TypePinned, ack: failed}})
	a.ack(msgs[2], nil)
	close(drain)
	<-done
	for i, want := range [][]string{{"ack"}, {"nak 1s"}, {"ack"}} {
		if got := msgs[i].log(); !slices.Equal(got, want) {
			t.Errorf("message %d: calls = %q, want %q", i, got, want)
		}
	}
	for result, want := range map[string]float64{"published": 1, "error": 1} {
		var d dto.Metric
		if err := m.Published.WithLabelValues(events.TypePinned, result).Write(&d); err != nil {
			t.Fatal(err)
		}
		if got := d.GetCounter().GetValue(); got != want {
			t.Errorf("published %s = %v, want %v", result, got, want)
		}
	}
}
