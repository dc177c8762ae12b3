package events_test

import (
	"testing"
	"time"

	"github.com/carddrift/carddrift/events"
)

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
