package events_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// benchInputs are a typical binary-mode a2a.task.request and a typical
// structured a2a.task.submitted, plus the structured bytes of the request
// for the sdk-go baseline.
func benchInputs(b *testing.B) (binRequest, stRequest, stSubmitted *nats.Msg) {
	req := events.Event{
		ID: "5f0c6a4e-2b1d-4c3e-9f8a-7b6c5d4e3f2a", Source: "urn:client:planner-7", Time: t0,
		Data:       events.Request{TaskID: "7f3c8a2e-1b4d-4e6f-9a0b-2c3d4e5f6a7b", AgentURL: "https://travel.example/a2a", Method: "message/stream", Attempt: 1},
		Extensions: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	}
	sub := events.Event{
		ID: "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e", Source: "urn:client:planner-7", Time: t0,
		Data: events.Submitted{
			TaskID: "7f3c8a2e-1b4d-4e6f-9a0b-2c3d4e5f6a7b", AgentURL: "https://travel.example/a2a", SkillID: "book-flight",
			Requires: events.Requires{Streaming: true, InputModes: []string{"text/plain"}, OutputModes: []string{"application/json"}, Security: []string{"oauth"}},
			Posture:  detector.Degrade, Idempotent: true,
			CardDigest: "sha256:3f5c8e1a9b7d2c4e6f8a0b1c3d5e7f9a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e",
			CardURL:    "https://travel.example/.well-known/agent-card.json",
		},
		Extensions: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	}
	var err error
	if binRequest, err = events.Encode(req, events.Binary); err != nil {
		b.Fatal(err)
	}
	if stRequest, err = events.Encode(req, events.Structured); err != nil {
		b.Fatal(err)
	}
	if stSubmitted, err = events.Encode(sub, events.Structured); err != nil {
		b.Fatal(err)
	}
	return binRequest, stRequest, stSubmitted
}

// BenchmarkDecode compares carddrift's Decode (envelope, data parse, schema
// validation and typed data) with a plain sdk-go event.Event JSON
// unmarshal of the same events in structured form (envelope only; the data
// stays raw bytes and is neither parsed nor validated), in the same run.
// The ratio sub-benchmark reports carddrift ns/op divided by sdk ns/op.
func BenchmarkDecode(b *testing.B) {
	binReq, stReq, stSub := benchInputs(b)
	decode := func(b *testing.B, m *nats.Msg) {
		if _, err := events.Decode(events.NATSMsg(m)); err != nil {
			b.Fatal(err)
		}
	}
	unmarshal := func(b *testing.B, m *nats.Msg) {
		var e event.Event
		if err := json.Unmarshal(m.Data, &e); err != nil {
			b.Fatal(err)
		}
	}
	for _, bm := range []struct {
		name string
		read func(*testing.B, *nats.Msg)
		m    *nats.Msg
	}{
		{"carddrift/binary-request", decode, binReq},
		{"carddrift/structured-submitted", decode, stSub},
		{"carddrift/structured-request", decode, stReq},
		{"sdk-unmarshal/structured-request", unmarshal, stReq},
		{"sdk-unmarshal/structured-submitted", unmarshal, stSub},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.m.Data)))
			for b.Loop() {
				bm.read(b, bm.m)
			}
		})
	}
	// ratio interleaves batches of each side and measures process CPU time
	// (GC included), not wall time, so that other processes competing for
	// the machine skew neither side. It reports carddrift CPU / sdk CPU for
	// the same event (the binary request against the sdk reading the same
	// request in structured form), and the CPU ns per event of each side.
	b.Run("ratio", func(b *testing.B) {
		const batch = 200
		pairs := []struct {
			metric string
			ours   *nats.Msg
			sdk    *nats.Msg
		}{
			{"x-binary-request/sdk", binReq, stReq},
			{"x-structured-request/sdk", stReq, stReq},
			{"x-structured-submitted/sdk", stSub, stSub},
		}
		ours := make([]time.Duration, len(pairs))
		sdk := make([]time.Duration, len(pairs))
		rounds := 0
		for b.Loop() {
			for i, p := range pairs {
				start := cpuNow()
				for range batch {
					decode(b, p.ours)
				}
				mid := cpuNow()
				for range batch {
					unmarshal(b, p.sdk)
				}
				ours[i] += mid - start
				sdk[i] += cpuNow() - mid
			}
			rounds++
		}
		for i, p := range pairs {
			b.ReportMetric(float64(ours[i])/float64(sdk[i]), p.metric)
		}
		for i, name := range []string{"binary-request", "structured-request", "structured-submitted"} {
			b.ReportMetric(float64(ours[i].Nanoseconds())/float64(rounds*batch), "cpu-ns-carddrift-"+name)
			b.ReportMetric(float64(sdk[i].Nanoseconds())/float64(rounds*batch), "cpu-ns-sdk-"+name)
		}
		b.ReportMetric(0, "ns/op")
	})
}

// BenchmarkEncode measures Encode (validation included) in both modes.
func BenchmarkEncode(b *testing.B) {
	e := events.Event{ID: "id", Source: "urn:client:planner-7", Time: t0,
		Data: events.Request{TaskID: "7f3c8a2e-1b4d-4e6f-9a0b-2c3d4e5f6a7b", AgentURL: "https://travel.example/a2a", Method: "message/stream", Attempt: 1}}
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		b.Run(mode.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := events.Encode(e, mode); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkToken measures Token on a safe id (no allocation) and on one
// that needs escapes.
func BenchmarkToken(b *testing.B) {
	for name, id := range map[string]string{"safe": "7f3c8a2e-1b4d-4e6f-9a0b-2c3d4e5f6a7b", "escaped": "orders.eu/7 ü"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = events.Token(id)
			}
		})
	}
}
