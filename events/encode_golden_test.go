package events_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
