package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// TestTraceContextCarried: the W3C trace context of a lifecycle event
// (CloudEvents traceparent/tracestate) is on every event its handling
// publishes — the card.pinned of a submission, the card.drift of a
// transition — in binary and structured mode.
func TestTraceContextCarried(t *testing.T) {
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		t.Run(mode.String(), func(t *testing.T) {
			r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
			out := r.Out()
			agent := servicetest.NewAgent(t, servicetest.WriteupT0)
			task := "traced-" + mode.String()
			publish := func(id, parent string, d events.Data) {
				t.Helper()
				m, err := events.Encode(events.Event{ID: id, Source: "urn:client:traced", Time: time.Now(), Data: d,
					Extensions: map[string]string{events.ExtTraceParent: parent, events.ExtTraceState: "vendor=abc"}}, mode)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.JS.PublishMsg(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			const subParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			const reqParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"
			publish("sub-"+task, subParent, events.Submitted{TaskID: task, AgentURL: agent.URL(), SkillID: "summarize",
				Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed})
			out.WaitFor(t, "card.pinned", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, task)) == 1 })
			agent.Set(servicetest.WriteupT40)
			publish("req-"+task, reqParent, events.Request{TaskID: task, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1})
			out.WaitFor(t, "card.drift", func(c *servicetest.Collector) bool { return len(c.Events(events.TypeDrift, task)) == 1 })

			for _, c := range []struct {
				ev     events.Event
				parent string
			}{
				{out.Events(events.TypePinned, task)[0], subParent},
				{out.Events(events.TypeDrift, task)[0], reqParent},
			} {
				if got := c.ev.Extensions[events.ExtTraceParent]; got != c.parent {
					t.Errorf("%s traceparent = %q, want %q (the lifecycle event's)", c.ev.Type, got, c.parent)
				}
				if got := c.ev.Extensions[events.ExtTraceState]; got != "vendor=abc" {
					t.Errorf("%s tracestate = %q, want vendor=abc", c.ev.Type, got)
				}
			}
		})
	}
}
