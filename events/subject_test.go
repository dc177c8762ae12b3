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
	"github.com/carddrift/carddrift/store/topology"
)

func TestCheckSubject(t *testing.T) {
	ev := func(d events.Data) events.Event { return events.Event{Type: d.EventType(), Data: d} }
	sub := events.Submitted{TaskID: "victim", AgentURL: "https://a.example", SkillID: "s"}
	dotted := events.Status{TaskID: "a.b *>", AgentURL: "https://a.example", State: "working"}
	cases := []struct {
		name       string
		ev         events.Event
		kind, task string
		ok         bool
	}{
		{"matching", ev(sub), "submitted", "victim", true},
		{"escaped id", ev(dotted), "status", events.Token("a.b *>"), true},
		{"empty id", ev(events.Status{TaskID: "", AgentURL: "https://a.example", State: "working"}), "status", "=", true},
		{"another task", ev(sub), "submitted", "decoy", false},
		{"another kind", ev(sub), "error", "victim", false},
		{"both", ev(sub), "error", "decoy", false},
		{"raw instead of token", ev(dotted), "status", "a.b *>", false},
		{"lower-case escape", ev(dotted), "status", strings.ToLower(events.Token("a.b *>")), false},
		{"type says another kind than data", events.Event{Type: events.TypeError, Data: sub}, "error", "victim", false},
		{"outbound event", ev(events.Pinned{TaskID: "victim", AgentURL: "https://a.example"}), "pinned", "victim", false},
		{"no data", events.Event{Type: events.TypeSubmitted}, "submitted", "victim", false},
		{"empty tokens", ev(sub), "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := events.CheckSubject(c.ev, c.kind, c.task)
			if c.ok && err != nil {
				t.Fatalf("CheckSubject(%s, %q, %q) = %v, want nil", c.ev.Type, c.kind, c.task, err)
			}
			if !c.ok && !errors.Is(err, events.ErrSubjectMismatch) {
				t.Fatalf("CheckSubject(%s, %q, %q) = %v, want ErrSubjectMismatch", c.ev.Type, c.kind, c.task, err)
			}
		})
	}
}

// subjectSeeds are subject/data pairs for FuzzCheckSubject: every lifecycle
// sample on its own subject, on another task's, on another kind's, and
// with the raw or a non-canonical task token. They are also committed under
// testdata/fuzz/FuzzCheckSubject (see TestWriteSubjectCorpus).
func subjectSeeds(t testing.TB) [][4]string {
	var seeds [][4]string
	for i, d := range samples() {
		m, err := events.Encode(events.Event{ID: fmt.Sprintf("seed-%d", i), Source: "urn:fuzz", Time: t0, Data: d}, events.Binary)
		if err != nil {
			t.Fatal(err)
		}
		h, body := headerBlob(m.Header), string(m.Data)
		kind, task, _ := strings.Cut(strings.TrimPrefix(m.Subject, "a2a.task."), ".")
		seeds = append(seeds,
			[4]string{kind, task, h, body},
			[4]string{kind, "decoy", h, body},
			[4]string{"error", task, h, body},
			[4]string{kind, strings.ToLower(task), h, body},
		)
	}
	bin := "ce-id: e1\nce-source: urn:test\nce-specversion: 1.0\nce-type: a2a.task.submitted\n"
	victim := `{"taskId":"victim","agentUrl":"https://a.example","skillId":"s"}`
	seeds = append(seeds,
		[4]string{"submitted", "victim", bin, victim},
		[4]string{"error", "decoy", bin, victim},
		[4]string{"submitted", "victim", bin + "ce-subject: decoy\n", victim},
		[4]string{"submitted", "=", bin, `{"taskId":"","agentUrl":"https://a.example","skillId":"s"}`},
		[4]string{"submitted", "a=2Eb", bin, `{"taskId":"a.b","agentUrl":"https://a.example","skillId":"s"}`},
		[4]string{"submitted", "a.b", bin, `{"taskId":"a.b","agentUrl":"https://a.example","skillId":"s"}`},
	)
	return seeds
}

// FuzzCheckSubject feeds subject tokens and an event to CheckSubject: it
// must never panic, it must accept exactly the subject the event's own
// encoding is published on (Subject), and every refusal must wrap
// ErrSubjectMismatch.
func FuzzCheckSubject(f *testing.F) {
	for _, s := range subjectSeeds(f) {
		f.Add(s[0], s[1], s[2], []byte(s[3]))
	}
	f.Fuzz(func(t *testing.T, kind, task, headers string, data []byte) {
		subject := "a2a.task." + kind + "." + task
		ev, err := events.Decode(events.NATSMsg(&nats.Msg{Subject: subject, Header: parseHeaderBlob(headers), Data: data}))
		if err != nil {
			return
		}
		err = events.CheckSubject(ev, kind, task)
		own, serr := events.Subject(ev.Data)
		switch {
		case err != nil && !errors.Is(err, events.ErrSubjectMismatch):
			t.Fatalf("CheckSubject = %v, not ErrSubjectMismatch", err)
		case err == nil && (serr != nil || own != subject):
			t.Fatalf("CheckSubject accepted %s on %q; its own subject is %q (%v)", ev.Type, subject, own, serr)
		case err != nil && serr == nil && own == subject && ev.Data.EventType() == ev.Type:
			t.Fatalf("CheckSubject refused %s on its own subject %q: %v", ev.Type, subject, err)
		}
	})
}

// TestWriteSubjectCorpus rewrites testdata/fuzz/FuzzCheckSubject from
// subjectSeeds when CARDDRIFT_WRITE_CORPUS=1; otherwise it checks that the
// committed corpus is there.
func TestWriteSubjectCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzCheckSubject")
	seeds := subjectSeeds(t)
	if os.Getenv("CARDDRIFT_WRITE_CORPUS") != "1" {
		files, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
		if len(files) < len(seeds) {
			t.Errorf("%s has %d seed files, want %d (CARDDRIFT_WRITE_CORPUS=1 go test -run TestWriteSubjectCorpus)", dir, len(files), len(seeds))
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range seeds {
		body := "go test fuzz v1\n"
		for _, v := range s[:3] {
			body += "string(" + strconv.Quote(v) + ")\n"
		}
		body += "[]byte(" + strconv.Quote(s[3]) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func defaultTopology() topology.Topology {
	var t topology.Topology
	t.SetDefaults()
	return t
}

// The default topology's streams take every event the contract publishes:
// each event's Subject is covered by the stream of its direction, lifecycle
// or outbound, and by no other, partitioned or not.
func TestTopologyDefaultsCoverSubjects(t *testing.T) {
	for _, partitions := range []int{0, 4} {
		top := defaultTopology()
		top.Partitions = partitions
		if err := top.Validate(); err != nil {
			t.Fatalf("default topology (partitions %d): Validate() = %v", partitions, err)
		}
		if top.LifecycleSubjects != events.InboundSubjects || top.EventsSubjects != events.OutboundSubjects {
			t.Errorf("default topology subjects %s, %s, want the contract's %s, %s",
				top.LifecycleSubjects, top.EventsSubjects, events.InboundSubjects, events.OutboundSubjects)
		}
		streams := top.DeclaredStreams()
		for _, d := range samples() {
			subj, err := events.Subject(d)
			if err != nil {
				t.Fatalf("Subject(%T) = %v", d, err)
			}
			want := top.EventsStream
			if strings.HasPrefix(d.EventType(), "a2a.task.") {
				want = top.LifecycleStream
			}
			var got []string
			for _, sc := range streams {
				for _, filter := range sc.Subjects {
					if subjectMatches(filter, subj) {
						got = append(got, sc.Name)
					}
				}
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("partitions %d: %s (%s) is stored by %v, want [%s]", partitions, subj, d.EventType(), got, want)
			}
		}
	}
}

// subjectMatches reports whether a NATS subject filter (tokens, '*', a
// final '>') matches subject.
func subjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s):
			return false
		case tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(f) == len(s)
}

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
