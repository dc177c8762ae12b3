package events_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/schemas"
)

// goldenFile holds, for each event of goldenCorpus and each mode, the
// SHA-256 of what Encode gave before the typed checks and the fast binary
// path (main at c06b618): subject, headers and data, or the error text.
const goldenFile = "testdata/encode-golden.txt"

// goldenCorpus is every sample and typed base under attribute variants
// (sources plain and not, extensions valid and not, explicit dataschemas,
// ids and times), and mutants of the bases' data (valid and not).
func goldenCorpus() []events.Event {
	var out []events.Event
	attrs := []events.Event{
		{ID: "e-1", Source: "urn:client:planner-7", Time: t0},
		{ID: "e 2 ", Source: "carddrift/worker-1"},
		{ID: "e-3", Source: "carddrift-demo-client", Time: t0.In(time.FixedZone("x", 3600)),
			Extensions: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "a=b c"}},
		{ID: "e-4", Source: "https://a.example/src?x=1"},
		{ID: "e-5", Source: "a b"},
		{ID: "e-6", Source: "http://a/%zz"},
		{ID: "e-7", Source: "urn:x", Extensions: map[string]string{"data": "x"}},
		{ID: "e-8", Source: "urn:x", Extensions: map[string]string{"averyveryverylongextensionname": "x"}},
		{ID: "e-9", Source: "urn:x", Extensions: map[string]string{"Upper": "x"}},
		{ID: "e-10", Source: "urn:x", Extensions: map[string]string{"ok": "\xff"}},
		{ID: "", Source: "urn:x"},
		{ID: "e-12", Source: "URN:x"},
		{ID: "e-13", Source: "urn:x", DataSchema: "https://carddrift.dev/schemas/card.drift/v1.json"},
		{ID: "e-14", Source: "urn:x", Subject: "other"},
	}
	for _, d := range typedBases() {
		for _, a := range attrs {
			e := a
			e.Data = d
			out = append(out, e)
		}
	}
	rng := rand.New(rand.NewPCG(2026, 12))
	for _, base := range typedBases() {
		for i := range 25 {
			out = append(out, events.Event{ID: fmt.Sprintf("m-%d", i), Source: "urn:golden", Time: t0, Data: mutant(rng, base, 1+i%3)})
		}
	}
	return out
}

// goldenSums encodes the corpus in both modes and hashes each outcome.
func goldenSums(t *testing.T) []string {
	var sums []string
	for _, e := range goldenCorpus() {
		for _, mode := range []events.Mode{events.Binary, events.Structured} {
			h := sha256.New()
			m, err := events.Encode(e, mode)
			if err != nil {
				fmt.Fprintf(h, "error\n%s", goldenError(err))
			} else {
				fmt.Fprintf(h, "subject %s\n%s\n", m.Subject, headerBlob(m.Header))
				h.Write(m.Data)
			}
			sums = append(sums, hex.EncodeToString(h.Sum(nil)))
		}
	}
	return sums
}

// goldenError is the text of an Encode error as the golden file hashes
// it: a schema violation by its type and the field it names (the wording
// of its reason is not pinned), any other error whole.
func goldenError(err error) string {
	var verr *schemas.ValidationError
	if errors.As(err, &verr) {
		return "schema violation: " + verr.Type + " " + verr.Field
	}
	return err.Error()
}

// TestEncodeGolden proves Encode's output unchanged: for every event of
// goldenCorpus in both modes, the subject, headers and data (or the error
// text, see goldenError) hash as they did before the typed checks and the fast binary
// path. CARDDRIFT_WRITE_GOLDEN=1 rewrites the file (only ever from the
// code the hashes are meant to pin).
func TestEncodeGolden(t *testing.T) {
	sums := goldenSums(t)
	if os.Getenv("CARDDRIFT_WRITE_GOLDEN") == "1" {
		if err := os.WriteFile(filepath.FromSlash(goldenFile), []byte(strings.Join(sums, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(filepath.FromSlash(goldenFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	if len(want) != len(sums) {
		t.Fatalf("%s has %d outcomes, the corpus %d", goldenFile, len(want), len(sums))
	}
	corpus := goldenCorpus()
	bad := 0
	for i := range sums {
		if sums[i] != want[i] {
			e := corpus[i/2]
			m, err := events.Encode(e, events.Mode(i%2))
			t.Errorf("outcome %d (%T, mode %d) changed: %v %v", i, e.Data, i%2, m, err)
			if bad++; bad > 10 {
				t.FailNow()
			}
		}
	}
}

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
