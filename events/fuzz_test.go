package events_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/carddrift/carddrift/events"
)

// headerBlob renders headers as "key: value" lines (keys sorted), the
// fuzzer's representation of a NATS header.
func headerBlob(h nats.Header) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range h[k] {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	return b.String()
}

// parseHeaderBlob reverses headerBlob; lines without ": " are skipped.
func parseHeaderBlob(blob string) nats.Header {
	h := nats.Header{}
	for _, line := range strings.Split(blob, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok {
			h[k] = append(h[k], v)
		}
	}
	return h
}

// fuzzSeeds are the encodings of every sample in both modes, plus damaged
// variants. They are also committed under testdata/fuzz/FuzzDecode (see
// TestWriteFuzzCorpus).
func fuzzSeeds(t testing.TB) [][2]string {
	var seeds [][2]string
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		for i, d := range samples() {
			m, err := events.Encode(events.Event{ID: fmt.Sprintf("seed-%d", i), Source: "urn:fuzz", Time: t0, Data: d, Extensions: map[string]string{"traceparent": "00-ab-cd-01"}}, mode)
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, [2]string{headerBlob(m.Header), string(m.Data)})
		}
	}
	bin := "ce-id: e1\nce-source: urn:test\nce-specversion: 1.0\nce-type: a2a.task.request\n"
	st := "content-type: application/cloudevents+json\n"
	seeds = append(seeds,
		[2]string{"", reqData},
		[2]string{bin, ""},
		[2]string{bin + "ce-id: e2\n", reqData},
		[2]string{bin + "ce-time: 2026-13-01T00:00:00Z\n", reqData},
		[2]string{bin + "ce-subject: t%ZZ\n", reqData},
		[2]string{bin + "ce-dataschema: https://carddrift.dev/schemas/a2a.task.request/v2.json\n", reqData},
		[2]string{bin, `{"taskId":"t1","agentUrl":"https://a.example","method":"m","attempt":1e99}`},
		[2]string{bin, `{"taskId":"\ud83d\ude00","agentUrl":"https://a.example","method":"m","attempt":1}`},
		[2]string{bin, strings.Repeat("[", 100)},
		[2]string{st, `{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request","data_base64":"e30="}`},
		[2]string{st, `{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request","x":1.5e3,"data":` + reqData + `}`},
		[2]string{st, `{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.submitted","data":{"taskId":"t","agentUrl":"https://a.example","skillId":"s","requires":{"streaming":true,"pushNotifications":false},"posture":"degrade","idempotent":false,"card":{"a":[1,{"b":null}]}}}`},
		[2]string{st, `{"specversion":"1.0"`},
	)
	return seeds
}

// FuzzDecode feeds arbitrary headers and payloads to Decode. Decode must
// never panic; a failure must be a *DecodeError with one of the three
// conditions; an event it accepts must encode in both modes and decode
// again to the same event, and its binary encoding must be the sdk-go
// binding's.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, headers string, data []byte) {
		m := &nats.Msg{Subject: "a2a.task.request.x", Header: parseHeaderBlob(headers), Data: data}
		ev, err := events.Decode(events.NATSMsg(m))
		if err != nil {
			var de *events.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error %T %v is not a *DecodeError", err, err)
			}
			if !errors.Is(err, events.ErrMalformedEnvelope) && !errors.Is(err, events.ErrUnknownType) && !errors.Is(err, events.ErrSchemaViolation) {
				t.Fatalf("Decode error %v has no condition", err)
			}
			return
		}
		sameBinary(t, ev) // the direct header writer is the sdk binding's
		want := ev
		want.Subject = ev.TaskID() // Encode always sets it
		for _, mode := range []events.Mode{events.Binary, events.Structured} {
			enc, err := events.Encode(ev, mode)
			if err != nil {
				t.Fatalf("Decode accepted %+v but Encode(%s) = %v", ev, mode, err)
			}
			again, err := events.Decode(events.NATSMsg(enc))
			if err != nil {
				t.Fatalf("Decode(Encode(%s)) = %v", mode, err)
			}
			sameEvent(t, again, want)
		}
	})
}

// TestWriteFuzzCorpus rewrites testdata/fuzz/FuzzDecode from fuzzSeeds when
// CARDDRIFT_WRITE_CORPUS=1; otherwise it checks that the committed corpus
// is there.
func TestWriteFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if os.Getenv("CARDDRIFT_WRITE_CORPUS") != "1" {
		files, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
		if len(files) < len(fuzzSeeds(t)) {
			t.Errorf("%s has %d seed files, want %d (CARDDRIFT_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus)", dir, len(files), len(fuzzSeeds(t)))
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range fuzzSeeds(t) {
		body := "go test fuzz v1\nstring(" + strconv.Quote(s[0]) + ")\n[]byte(" + strconv.Quote(s[1]) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
