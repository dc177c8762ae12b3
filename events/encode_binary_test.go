package events_test

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/carddrift/carddrift/events"
)

// sameBinary reports how Encode's binary message and the sdk-go binding's
// differ ("" when they are the same: subject, every header, data).
func sameBinary(t testing.TB, e events.Event) {
	t.Helper()
	got, err := events.Encode(e, events.Binary)
	want, werr := events.EncodeBinarySDK(e)
	if (err != nil) != (werr != nil) {
		t.Fatalf("Encode = %v, sdk binding = %v", err, werr)
	}
	if err != nil {
		return
	}
	if got.Subject != want.Subject || !reflect.DeepEqual(got.Header, want.Header) || !bytes.Equal(got.Data, want.Data) {
		t.Errorf("Encode(%+v, Binary) =\n  %s %v %s\nthe sdk binding writes\n  %s %v %s", e, got.Subject, got.Header, got.Data, want.Subject, want.Header, want.Data)
	}
}

// TestEncodeBinaryIsSDKBinding holds Encode's binary headers, written
// directly, to the sdk-go binding that wrote them before (the oracle,
// events.EncodeBinarySDK): every sample, with and without time, subject
// and extensions, values that need percent-encoding, times in other zones.
func TestEncodeBinaryIsSDKBinding(t *testing.T) {
	zone := time.FixedZone("x", -7*3600)
	exts := []map[string]string{
		nil,
		{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "a=b,c=d"},
		{"x1": "a b \"c\" %d é \u2028", "x2": "", "partitionkey": "7"},
	}
	for i, d := range samples() {
		for _, ext := range exts {
			for _, tm := range []time.Time{{}, t0, t0.In(zone), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} {
				for _, src := range []string{"urn:client:planner-7", "https://client.example/x?y=1", "/relative"} {
					e := events.Event{ID: "id-" + string(rune('a'+i)) + " é", Source: src, Time: tm, Data: d, Extensions: ext}
					sameBinary(t, e)
				}
			}
		}
	}
	sameBinary(t, events.Event{ID: "i", Source: "urn:x", Data: events.Status{TaskID: "orders.eu/7 ü %20", AgentURL: "https://a.example", State: "working"}})
}

// TestEncodeHeadersIndependent: each header's value slice is its own, so
// that adding a value to one header leaves the others as they were.
func TestEncodeHeadersIndependent(t *testing.T) {
	m, err := events.Encode(events.Event{ID: "i", Source: "urn:x", Time: t0, Data: events.Status{TaskID: "t", AgentURL: "https://a.example", State: "working"}}, events.Binary)
	if err != nil {
		t.Fatal(err)
	}
	before := nats.Header{}
	for k, v := range m.Header {
		before[k] = append([]string(nil), v...)
	}
	for k := range m.Header {
		m.Header.Add(k, "added")
		for k2, v := range m.Header {
			if k2 != k && !reflect.DeepEqual(v, before[k2]) {
				t.Fatalf("adding to %s changed %s to %v", k, k2, v)
			}
		}
		m.Header[k] = before[k]
	}
}
