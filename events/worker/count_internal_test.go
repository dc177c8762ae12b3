package worker

import (
	"context"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
)

// TestCount: every event leaving the chain is counted once, by type and
// the outcome it leaves with, and its time observed; a nil *Metrics counts
// nothing.
func TestCount(t *testing.T) {
	m := NewMetrics(nil)
	ev := events.Event{Type: events.TypeStatus}
	for _, outcome := range []string{task.OutcomeDrift, task.OutcomeDrift, outcomeRetry} {
		count(m)(handled(outcome, nil).handle)(context.Background(), &delivered{ev: ev})
	}
	for _, c := range []struct {
		outcome string
		want    float64
	}{{task.OutcomeDrift, 2}, {outcomeRetry, 1}, {outcomeDeadLetter, 0}} {
		if got := counted(t, m, events.TypeStatus, c.outcome); got != c.want {
			t.Errorf("carddrift_events_total{%s, %s} = %v, want %v", events.TypeStatus, c.outcome, got, c.want)
		}
	}
	var h dto.Metric
	if err := m.EventTime.WithLabelValues(events.TypeStatus).(interface{ Write(*dto.Metric) error }).Write(&h); err != nil {
		t.Fatal(err)
	}
	if got := h.GetHistogram().GetSampleCount(); got != 3 {
		t.Errorf("carddrift_event_duration_seconds{%s} samples = %d, want 3", events.TypeStatus, got)
	}
	if outcome, _ := count(nil)(handled(task.OutcomeDrift, nil).handle)(context.Background(), &delivered{ev: ev}); outcome != task.OutcomeDrift {
		t.Errorf("count(nil) = %q, want the handler's outcome", outcome)
	}
}
