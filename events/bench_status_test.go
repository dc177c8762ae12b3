package events_test

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/carddrift/carddrift/events"
)

// statusInputs are a realistic no-fetch a2a.task.status event (a v0.3
// state, a skill id, a trace context) in both content modes: what an A2A
// client publishes at every status update of a pinned task.
func statusInputs(b *testing.B) (bin, st *nats.Msg) {
	ev := events.Event{
		ID: "9d3f1c2b-7a6e-4b5d-8c9f-0e1d2c3b4a59", Source: "urn:client:planner-7", Time: t0,
		Data: events.Status{TaskID: "7f3c8a2e-1b4d-4e6f-9a0b-2c3d4e5f6a7b", AgentURL: "https://travel.example/a2a",
			State: "input-required", SkillID: "book-flight"},
		Extensions: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	}
	var err error
	if bin, err = events.Encode(ev, events.Binary); err != nil {
		b.Fatal(err)
	}
	if st, err = events.Encode(ev, events.Structured); err != nil {
		b.Fatal(err)
	}
	return bin, st
}

// BenchmarkDecodeStatus measures Decode of the no-fetch hot path's event,
// a2a.task.status, in binary and structured mode (profile it with
// -cpuprofile), and Encode of the same event.
func BenchmarkDecodeStatus(b *testing.B) {
	bin, st := statusInputs(b)
	for _, bm := range []struct {
		name string
		m    *nats.Msg
	}{{"binary", bin}, {"structured", st}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.m.Data)))
			for b.Loop() {
				if _, err := events.Decode(events.NATSMsg(bm.m)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	ev, err := events.Decode(events.NATSMsg(bin))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		b.Run("encode-"+mode.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := events.Encode(ev, mode); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeOutbound measures Encode (binary, validation included) of
// the events carddrift publishes: one of each outbound sample type.
func BenchmarkEncodeOutbound(b *testing.B) {
	for _, d := range samples() {
		typ := d.EventType()
		if typ[:5] != "card." {
			continue
		}
		e := events.Event{ID: "id", Source: "urn:carddrift:test", Time: t0, Data: d}
		b.Run(typ, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := events.Encode(e, events.Binary); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
