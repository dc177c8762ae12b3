package replay

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/carddrift/carddrift/events"
)

// TestWanted: a window's read leaves undecoded only what its headers show
// cannot be in the answer or the state it opens in; whatever the headers
// do not say for certain is decoded.
func TestWanted(t *testing.T) {
	since := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	q := Query{Since: since, Until: since.Add(2 * time.Second)}
	before, in, after := "2026-03-01T09:59:59.9Z", "2026-03-01T11:00:01+01:00", "2026-03-01T10:00:02.000000001Z"
	h := func(kv ...string) nats.Header {
		h := nats.Header{}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = append(h[kv[i]], kv[i+1])
		}
		return h
	}
	for _, tc := range []struct {
		name      string
		lifecycle bool
		h         nats.Header
		want      bool
	}{
		{"lifecycle in the window", true, h("ce-time", in), true},
		{"lifecycle at since", true, h("ce-time", "2026-03-01T10:00:00Z"), true},
		{"lifecycle at until", true, h("ce-time", "2026-03-01T10:00:02Z"), true},
		{"lifecycle before", true, h("ce-time", before), false},
		{"lifecycle after", true, h("ce-time", after), false},
		{"no time: stored time", true, h(), true},
		{"zero time: stored time", true, h("ce-time", "0001-01-01T00:00:00Z"), true},
		{"time not RFC 3339", true, h("ce-time", "yesterday"), true},
		{"time percent-encoded", true, h("ce-time", "2026-03-01T09%3A59%3A59Z"), true},
		{"time repeated", true, h("ce-time", before, "ce-time", before), true},
		{"time under another case", true, h("Ce-Time", before), true},
		{"pin before: the state", false, h("ce-type", events.TypePinned, "ce-time", before), true},
		{"pin after", false, h("ce-type", events.TypePinned, "ce-time", after), false},
		{"observation before: the state", false, h("ce-type", events.TypeObserved, "ce-time", before), true},
		{"observation after: its time is its fetch's", false, h("ce-type", events.TypeObserved, "ce-time", after), true},
		{"drift before", false, h("ce-type", events.TypeDrift, "ce-time", before), false},
		{"drift in", false, h("ce-type", events.TypeDrift, "ce-time", in), true},
		{"drift after", false, h("ce-type", events.TypeDrift, "ce-time", after), false},
		{"unreachable before", false, h("ce-type", events.TypeUnreachable, "ce-time", before), false},
		{"inconsistent after", false, h("ce-type", events.TypeInconsistent, "ce-time", after), false},
		{"no type", false, h("ce-time", before), true},
		{"unknown type", false, h("ce-type", "card.future", "ce-time", before), true},
	} {
		if got := wanted(q, tc.lifecycle)(tc.h); got != tc.want {
			t.Errorf("%s: wanted(%v) = %v, want %v", tc.name, tc.h, got, tc.want)
		}
	}
	// Open ends keep their side.
	if !wanted(Query{Since: since}, true)(h("ce-time", after)) || !wanted(Query{Until: since}, false)(h("ce-type", events.TypeDrift, "ce-time", before)) {
		t.Error("an open end left out an event on its side")
	}
}
