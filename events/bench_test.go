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

// encodeBenchEvents are the events of the demo's mix, as its fleet and
// workers publish them: the lifecycle events a client sends (status,
// request, artifact, submitted) and the card.* events a worker sends, one
// of each sample type.
func encodeBenchEvents() []events.Event {
	client := []events.Data{
		events.Status{TaskID: "agent-017-book-0042", AgentURL: "http://127.0.0.1:40123", State: "working"},
		events.Request{TaskID: "agent-017-book-0042", AgentURL: "http://127.0.0.1:40123", Method: "message/stream", Attempt: 1},
		events.Artifact{TaskID: "agent-017-book-0042", AgentURL: "http://127.0.0.1:40123", ArtifactID: "a3", MediaTypes: []string{"application/json"}},
	}
	var out []events.Event
	for _, d := range client {
		out = append(out, events.Event{ID: "agent-017-book-0042/3", Source: "carddrift-demo-client", Time: t0, Data: d})
	}
	for _, d := range samples() {
		if d.EventType() == events.TypeSubmitted || d.EventType()[:5] == "card." {
			out = append(out, events.Event{ID: "id-1", Source: "carddrift/worker-1", Time: t0, Data: d})
		}
	}
	return out
}

// BenchmarkEncodeTypes measures Encode in binary mode per event type
// against the baseline kept in the same run, Encode as it was before the
// typed checks (EncodeBaseline: data parsed back into a tree and
// validated, the sdk event built). The ratio sub-benchmark interleaves
// batches of both and measures process CPU time (GC included); it
// reports, per type, Encode's CPU over the baseline's ("x-<type>"; below
// 1 is faster) and the CPU ns per event of each.
func BenchmarkEncodeTypes(b *testing.B) {
	evs := encodeBenchEvents()
	for _, e := range evs {
		for _, side := range []struct {
			name string
			enc  func(events.Event) error
		}{
			{"encode", func(e events.Event) error { _, err := events.Encode(e, events.Binary); return err }},
			{"baseline", func(e events.Event) error { _, err := events.EncodeBaseline(e); return err }},
		} {
			b.Run(side.name+"/"+e.Data.EventType(), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := side.enc(e); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("ratio", func(b *testing.B) {
		const batch = 200
		ours := make([]time.Duration, len(evs))
		base := make([]time.Duration, len(evs))
		rounds := 0
		for b.Loop() {
			for i, e := range evs {
				start := cpuNow()
				for range batch {
					if _, err := events.Encode(e, events.Binary); err != nil {
						b.Fatal(err)
					}
				}
				mid := cpuNow()
				for range batch {
					if _, err := events.EncodeBaseline(e); err != nil {
						b.Fatal(err)
					}
				}
				ours[i] += mid - start
				base[i] += cpuNow() - mid
			}
			rounds++
		}
		var sumOurs, sumBase time.Duration
		for i, e := range evs {
			typ := e.Data.EventType()
			b.ReportMetric(float64(ours[i])/float64(base[i]), "x-"+typ)
			b.ReportMetric(float64(ours[i].Nanoseconds())/float64(rounds*batch), "cpu-ns-encode-"+typ)
			b.ReportMetric(float64(base[i].Nanoseconds())/float64(rounds*batch), "cpu-ns-baseline-"+typ)
			sumOurs += ours[i]
			sumBase += base[i]
		}
		b.ReportMetric(float64(sumOurs)/float64(sumBase), "x-all")
		b.ReportMetric(0, "ns/op")
	})
}
