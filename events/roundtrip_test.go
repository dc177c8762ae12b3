package events_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/schemas"
	"github.com/carddrift/carddrift/store/natstest"
)

// TestRoundTrip encodes every event type in both modes, publishes it to a
// real JetStream stream, consumes it and decodes it, and checks that the
// event, its subject and its dataschema come back unchanged.
func TestRoundTrip(t *testing.T) {
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		t.Run(mode.String(), func(t *testing.T) {
			withJS(t, func(js jetstream.JetStream) {
				ctx := context.Background()
				var want []events.Event
				inbound, outbound := 0, 0
				for i, d := range samples() {
					e := events.Event{
						ID:         fmt.Sprintf("id-%d", i),
						Source:     "urn:test:roundtrip",
						Time:       t0.Add(time.Duration(i) * time.Second),
						Data:       d,
						Extensions: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "note": "ünïcode and spaces"},
					}
					msg, err := events.Encode(e, mode)
					if err != nil {
						t.Fatalf("Encode(%T): %v", d, err)
					}
					if _, err := js.PublishMsg(ctx, msg); err != nil {
						t.Fatalf("PublishMsg(%s): %v", msg.Subject, err)
					}
					s, _ := schemas.Lookup(d.EventType())
					e.Type, e.Subject, e.DataSchema = d.EventType(), e.TaskID(), s.ID
					want = append(want, e)
					if e.Type[:4] == "a2a." {
						inbound++
					} else {
						outbound++
					}
				}
				got := append(natstest.ReadStream(t, js, "A2A", inbound), natstest.ReadStream(t, js, "CARD", outbound)...)
				for i, m := range got {
					ev, err := events.Decode(m)
					if err != nil {
						t.Errorf("Decode(%s): %v", m.Subject(), err)
						continue
					}
					sameEvent(t, ev, want[i])
					if reflect.TypeOf(ev.Data) != reflect.TypeOf(want[i].Data) {
						t.Errorf("Decode(%s).Data is %T, want %T", m.Subject(), ev.Data, want[i].Data)
					}
					subj, _ := events.Subject(want[i].Data)
					if m.Subject() != subj {
						t.Errorf("subject = %s, want %s", m.Subject(), subj)
					}
					if err := schemas.Validate(ev.Type, []byte(canonical(t, ev.Data))); err != nil {
						t.Errorf("decoded %s data does not validate: %v", ev.Type, err)
					}
				}
			})
		})
	}
}

// TestModeHeaders checks the wire form of each mode.
func TestModeHeaders(t *testing.T) {
	e := events.Event{ID: "id-1", Source: "urn:test", Time: t0, Data: samples()[1]} // Request with a non-ASCII, quoted task id
	bin, err := events.Encode(e, events.Binary)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"ce-specversion":     "1.0",
		"ce-id":              "id-1",
		"ce-source":          "urn:test",
		"ce-type":            events.TypeRequest,
		"ce-subject":         "t%C3%A4sk-%C3%BC/%2520%22quoted%22",
		"ce-time":            "2026-05-01T10:00:00.123456789Z",
		"ce-dataschema":      "https://carddrift.dev/schemas/a2a.task.request/v1.json",
		"ce-datacontenttype": "application/json",
	} {
		if got := bin.Header.Get(k); got != want {
			t.Errorf("binary header %s = %q, want %q", k, got, want)
		}
	}
	if ct := bin.Header.Get("content-type"); ct != "" {
		t.Errorf("binary content-type = %q, want none", ct)
	}
	if bin.Subject != "a2a.task.request.t=C3=A4sk-=C3=BC=2F=2520=22quoted=22" {
		t.Errorf("binary subject = %s", bin.Subject)
	}
	st, err := events.Encode(e, events.Structured)
	if err != nil {
		t.Fatal(err)
	}
	if ct := st.Header.Get("content-type"); ct != events.ContentTypeStructured {
		t.Errorf("structured content-type = %q", ct)
	}
	for k := range st.Header {
		if k != "content-type" {
			t.Errorf("structured header %s, want only content-type", k)
		}
	}
}

// TestSDKInterop checks that sdk-go reads what Encode writes (through
// NewMessage) and that Decode reads what sdk-go writes.
func TestSDKInterop(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		for _, d := range samples() {
			e := events.Event{ID: "id-9", Source: "urn:test:sdk", Time: t0, Data: d, Extensions: map[string]string{"traceparent": "00-ab-cd-01"}}
			msg, err := events.Encode(e, mode)
			if err != nil {
				t.Fatal(err)
			}
			ce, err := binding.ToEvent(ctx, events.NewMessage(events.NATSMsg(msg)))
			if err != nil {
				t.Fatalf("%s %T: binding.ToEvent: %v", mode, d, err)
			}
			if err := ce.Validate(); err != nil && e.TaskID() != "   " { // sdk-go refuses a blank subject; CloudEvents allows it
				t.Errorf("%s %T: sdk Validate: %v", mode, d, err)
			}
			// sdk-go's setters (binary mode) trim spaces: a blank task id
			// loses its subject there, which Decode accepts (subject is
			// optional).
			wantSubject := e.TaskID()
			if mode == events.Binary {
				wantSubject = strings.TrimSpace(wantSubject)
			}
			if ce.ID() != "id-9" || ce.Type() != d.EventType() || ce.Subject() != wantSubject || ce.Source() != "urn:test:sdk" || !ce.Time().Equal(t0) || ce.Extensions()["traceparent"] != "00-ab-cd-01" {
				t.Errorf("%s %T: sdk event = %v", mode, d, ce)
			}
			if got, want := string(ce.Data()), canonical(t, d); got != want {
				t.Errorf("%s %T: sdk data = %s, want %s", mode, d, got, want)
			}

			// sdk-go's own structured encoding of the same event decodes.
			raw, err := format.JSON.Marshal(ce)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := events.Decode(events.NATSMsg(&nats.Msg{Subject: msg.Subject, Header: nats.Header{"content-type": {events.ContentTypeStructured}}, Data: raw}))
			if err != nil {
				t.Fatalf("%s %T: Decode(sdk structured): %v", mode, d, err)
			}
			want := e
			want.Type, want.Subject, want.DataSchema = d.EventType(), wantSubject, ce.DataSchema()
			sameEvent(t, ev, want)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	good := events.Event{ID: "x", Source: "urn:test", Data: samples()[1]}
	for _, tc := range []struct {
		name  string
		edit  func(e *events.Event)
		want  error
		field string
	}{
		{"no data", func(e *events.Event) { e.Data = nil }, events.ErrInvalidEvent, ""},
		{"no id", func(e *events.Event) { e.ID = "" }, events.ErrInvalidEvent, ""},
		{"no source", func(e *events.Event) { e.Source = "" }, events.ErrInvalidEvent, ""},
		{"source with space", func(e *events.Event) { e.Source = "urn:a b" }, events.ErrInvalidEvent, ""},
		{"wrong type", func(e *events.Event) { e.Type = events.TypeStatus }, events.ErrInvalidEvent, ""},
		{"wrong subject", func(e *events.Event) { e.Subject = "other" }, events.ErrInvalidEvent, ""},
		{"unknown dataschema", func(e *events.Event) { e.DataSchema = "https://carddrift.dev/schemas/a2a.task.request/v9.json" }, events.ErrInvalidEvent, ""},
		{"dataschema of another type", func(e *events.Event) { e.DataSchema = schemas.ID(events.TypeStatus, 1) }, events.ErrInvalidEvent, ""},
		{"reserved extension", func(e *events.Event) { e.Extensions = map[string]string{"id": "y"} }, events.ErrInvalidEvent, ""},
		{"bad extension name", func(e *events.Event) { e.Extensions = map[string]string{"Trace-Parent": "y"} }, events.ErrInvalidEvent, ""},
		{"attempt 0", func(e *events.Event) {
			e.Data = events.Request{TaskID: "t", AgentURL: "https://a.example", Method: "m"}
		}, events.ErrSchemaViolation, "/attempt"},
		{"no task id", func(e *events.Event) {
			e.Data = events.Status{AgentURL: "https://a.example", State: "working"}
		}, events.ErrSchemaViolation, "/taskId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := good
			tc.edit(&e)
			_, err := events.Encode(e, events.Binary)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Encode = %v, want %v", err, tc.want)
			}
			if tc.field != "" {
				var verr *schemas.ValidationError
				if !errors.As(err, &verr) || verr.Field != tc.field {
					t.Errorf("Encode = %v, want field %s", err, tc.field)
				}
			}
		})
	}
	if _, err := events.Encode(good, events.Mode(7)); !errors.Is(err, events.ErrInvalidEvent) {
		t.Errorf("Encode(mode 7) = %v, want ErrInvalidEvent", err)
	}
}

func drift(rules ...string) events.Drift {
	d := samples()[5].(events.Drift)
	d.Findings = nil
	for _, r := range rules {
		d.Findings = append(d.Findings, detector.Finding{Rule: r, Severity: detector.Breaking, Path: "/x", Message: r})
	}
	return d
}

func TestMsgID(t *testing.T) {
	base := drift("streaming-disabled", "skill-removed")
	same := []events.Data{
		drift("skill-removed", "streaming-disabled"),                  // order
		drift("skill-removed", "streaming-disabled", "skill-removed"), // repeats
		func() events.Drift { // trigger, verdict, etags and times do not matter
			d := drift("streaming-disabled", "skill-removed")
			d.Trigger = events.Trigger{EventID: "other", Type: events.TypeStatus}
			d.Verdict.Action = detector.Continue
			d.Live.ETag, d.Live.FetchedAt = `"v9"`, time.Time{}
			return d
		}(),
		&base, // pointer
	}
	different := []events.Data{
		drift("streaming-disabled"),
		drift("streaming-disabled", "skill-removed", "blind-retry"),
		func() events.Drift { d := base; d.TaskID = "task-2"; return d }(),
		func() events.Drift { d := base; d.Pinned.Digest = digestB; return d }(),
		func() events.Drift { d := base; d.Live.Digest = digestA; return d }(),
		// Field boundaries are length-prefixed: moving bytes between the
		// task id and a rule id changes the id.
		func() events.Drift { d := drift("a-b"); d.TaskID = "task-1a"; return d }(),
	}
	id := events.MsgID(base)
	if !strings.HasPrefix(id, "drift-") || len(id) != len("drift-")+64 {
		t.Fatalf("MsgID(drift) = %q", id)
	}
	for i, d := range same {
		if got := events.MsgID(d); got != id {
			t.Errorf("same[%d]: MsgID = %s, want %s", i, got, id)
		}
	}
	seen := map[string]int{id: -1}
	for i, d := range different {
		got := events.MsgID(d)
		if j, dup := seen[got]; dup {
			t.Errorf("different[%d]: MsgID = %s, same as %d", i, got, j)
		}
		seen[got] = i
	}

	pin := samples()[6].(events.Pinned)
	pin2 := pin
	pin2.Trigger.EventID = "e-resubmitted"
	obs := samples()[7].(events.Observed)
	obs2 := obs
	obs2.FetchedAt = obs.FetchedAt.Add(time.Nanosecond)
	un := samples()[8].(events.Unreachable)
	un2 := un
	un2.AttemptedAt = un.AttemptedAt.Add(time.Second)
	unT := un
	unT.Trigger = events.Trigger{EventID: "e-7", Type: events.TypeRequest}
	unT2 := unT
	unT2.AttemptedAt = unT.AttemptedAt.Add(time.Hour) // with a trigger, time does not matter
	for _, tc := range []struct {
		a, b   events.Data
		prefix string
		equal  bool
	}{
		{pin, pin2, "pinned-", false},
		{pin, &pin, "pinned-", true}, // a pointer is its value
		{obs, obs2, "observed-", false},
		{obs, func() events.Observed { o := obs; o.FetchedAt = o.FetchedAt.In(time.FixedZone("x", 3600)); return o }(), "observed-", true},
		{un, un2, "unreachable-", false},
		{unT, unT2, "unreachable-", true},
		{un, unT, "unreachable-", false},
		{un, &un, "unreachable-", true},
	} {
		a, b := events.MsgID(tc.a), events.MsgID(tc.b)
		if !strings.HasPrefix(a, tc.prefix) || (a == b) != tc.equal {
			t.Errorf("MsgID(%#v) = %s, MsgID(%#v) = %s, want equal=%v", tc.a, a, tc.b, b, tc.equal)
		}
	}
	for _, d := range samples() {
		id := events.MsgID(d)
		if inbound := strings.HasPrefix(d.EventType(), "a2a.task."); inbound != (id == "") {
			t.Errorf("MsgID(%T) = %q: want \"\" exactly for inbound data (an outbound type needs a msgID method)", d, id)
		}
	}
}

// TestMsgIDStable pins the ids of the outbound samples. Ids must not change
// between versions: during a rolling deploy an old and a new worker publish
// the same outcome, and the stream's duplicate window drops the second copy
// only when both compute the same id. (Values computed by carddrift before
// message ids became methods of the outbound types, and unchanged since.)
func TestMsgIDStable(t *testing.T) {
	want := map[string]string{
		events.TypeDrift:        "drift-27d2c6efe8429d1f4c3385fbed7210b2e06456dd6f85d6b67dafd6ea7c53d017",
		events.TypePinned:       "pinned-b45cbfd9ce845ec4e948aad17c73582afb84b0b0dc3b6b3b6ef3dcbf17324a8c",
		events.TypeObserved:     "observed-945b14bb998bc5183317f99c8def77d23bb93edccc080e977d6650be69408175",
		events.TypeUnreachable:  "unreachable-709e93985891deca277ca2bed2911f566f5b9d7965c08b8dc2da0a26d54d045f",
		events.TypeInconsistent: "inconsistent-01190890351b27c4bc1fcb86c2fd93b14a8b2e5b857d1cfc69a609c0baa2b317",
	}
	var drift events.Drift
	for _, d := range samples() {
		if w, ok := want[d.EventType()]; ok {
			if got := events.MsgID(d); got != w {
				t.Errorf("MsgID(%s sample) = %s, want %s", d.EventType(), got, w)
			}
			delete(want, d.EventType())
		}
		if dr, ok := d.(events.Drift); ok {
			drift = dr
		}
	}
	if len(want) > 0 {
		t.Errorf("no sample of %v", want)
	}
	signed := []struct {
		name   string
		signer *detector.Signature
		repeat bool // every finding twice: rule ids count once
		want   string
	}{
		{"thumbprint", &detector.Signature{KeyID: "k1", Thumbprint: "tp1"}, false, "drift-910a334fe1f0709bb68b333281b49c2fb48ec37f1fe517b194b548c8f869da2d"},
		{"kid only", &detector.Signature{KeyID: "k1"}, false, "drift-ee2bc1a38c58b2ec4d1167e523991899d8c54d3a6a11e0f97c9d797e772b04a4"},
		{"kid only, findings repeated", &detector.Signature{KeyID: "k1"}, true, "drift-ee2bc1a38c58b2ec4d1167e523991899d8c54d3a6a11e0f97c9d797e772b04a4"},
	}
	for _, tc := range signed {
		d := drift
		d.Live.Signer = tc.signer
		if tc.repeat {
			d.Findings = append(slices.Clone(d.Findings), d.Findings...)
		}
		if got := events.MsgID(d); got != tc.want {
			t.Errorf("MsgID(drift signed, %s) = %s, want %s", tc.name, got, tc.want)
		}
	}
}

var (
	signerA = detector.Signature{KeyID: "agent-2026-05", Alg: "ES256", Thumbprint: "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
		Source: "trusted", Verified: true, Reason: "verified"}
	signerB = detector.Signature{KeyID: "other-1", Alg: "EdDSA", JKU: "https://cdn.example/jwks.json", Verified: false, Reason: "no-key"}
)

// signedSamples are a card.drift and a card.pinned of signed cards.
func signedSamples() (events.Drift, events.Pinned) {
	d := samples()[5].(events.Drift)
	a, b := signerA, signerB
	d.Pinned.Signer, d.Live.Signer = &a, &b
	d.Findings = append(d.Findings, detector.Finding{Rule: detector.RuleSignerChanged, Severity: detector.Warning,
		Path: "/signatures/0", Before: map[string]any{"kid": "agent-2026-05"}, After: map[string]any{"kid": "other-1"},
		Message: "signer changed", Touches: true})
	p := samples()[6].(events.Pinned)
	p.Signer = &a
	return d, p
}

// Signers survive Encode and Decode in both modes, and validate.
func TestSignerRoundTrip(t *testing.T) {
	d, p := signedSamples()
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		for _, data := range []events.Data{d, p} {
			msg, err := events.Encode(events.Event{ID: "x", Source: "urn:test", Time: t0, Data: data}, mode)
			if err != nil {
				t.Fatalf("Encode(%T, %v) = %v", data, mode, err)
			}
			ev, err := events.Decode(events.NATSMsg(msg))
			if err != nil {
				t.Fatalf("Decode(%T, %v) = %v", data, mode, err)
			}
			var got, want *detector.Signature
			switch g := ev.Data.(type) {
			case events.Drift:
				got, want = g.Live.Signer, d.Live.Signer
				if !reflect.DeepEqual(g.Pinned.Signer, d.Pinned.Signer) {
					t.Errorf("%v: pinned signer = %+v, want %+v", mode, g.Pinned.Signer, d.Pinned.Signer)
				}
			case events.Pinned:
				got, want = g.Signer, p.Signer
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%v %T: signer = %+v, want %+v", mode, data, got, want)
			}
			if c := canonical(t, ev.Data); c != canonical(t, data) {
				t.Errorf("%v: decoded %s\nwant %s", mode, c, canonical(t, data))
			}
		}
	}
	// Unsigned cards carry no signer member at all.
	plain := samples()[5].(events.Drift)
	msg, err := events.Encode(events.Event{ID: "x", Source: "urn:test", Data: plain}, events.Structured)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := events.Decode(events.NATSMsg(msg))
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.Data.(events.Drift); got.Pinned.Signer != nil || got.Live.Signer != nil {
		t.Errorf("unsigned cards decoded with signers %+v, %+v", got.Pinned.Signer, got.Live.Signer)
	}
}

// A card.drift of signed cards is identified by its live signer's key too
// (signatures never change a digest); one of unsigned cards keeps the id it
// had before signers were recorded.
func TestDriftIDSigner(t *testing.T) {
	d, _ := signedSamples()
	plain := d
	plain.Pinned.Signer, plain.Live.Signer = nil, nil
	const before = "drift-" // the id of plain is fixed by the fields it always had
	if id := events.MsgID(plain); id == events.MsgID(d) || id[:len(before)] != before {
		t.Errorf("MsgID with and without signers: %s, %s", id, events.MsgID(d))
	}
	other := d
	c := signerA
	other.Live.Signer = &c
	if events.MsgID(other) == events.MsgID(d) {
		t.Error("a drift re-signed by another key has the id of the first")
	}
	again := other
	reasonOnly := signerA
	reasonOnly.Verified, reasonOnly.Reason = false, "invalid-signature"
	again.Live.Signer = &reasonOnly
	if events.MsgID(again) != events.MsgID(other) {
		t.Error("the same signer's key with another outcome changed the id")
	}
	pinnedOnly := plain
	pinnedOnly.Pinned.Signer = &c
	if events.MsgID(pinnedOnly) != events.MsgID(plain) {
		t.Error("the pinned signer changed the id (it is fixed per pin)")
	}
}

// decodeSubmitted decodes data as a2a.task.submitted in every content mode
// and returns the typed data of each.
func decodeSubmitted(t *testing.T, data string) map[string]events.Submitted {
	t.Helper()
	out := map[string]events.Submitted{}
	for name, m := range map[string]events.Msg{
		"binary":            msg(binHeaders("ce-type", events.TypeSubmitted), data),
		"structured":        structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.submitted","data":` + data + `}`),
		"structured base64": structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.submitted","data_base64":"` + base64.StdEncoding.EncodeToString([]byte(data)) + `"}`),
	} {
		ev, err := events.Decode(m)
		if err != nil {
			t.Fatalf("%s: Decode(%s) = %v", name, data, err)
		}
		out[name] = ev.Data.(events.Submitted)
	}
	return out
}

// TestDecodeMinimalSubmitted: a client that sends only taskId, agentUrl and
// skillId is accepted, and the defaults of the contract apply in code:
// nothing required, fail-closed, not idempotent.
func TestDecodeMinimalSubmitted(t *testing.T) {
	const data = `{"taskId":"t1","agentUrl":"https://a.example","skillId":"summarize"}`
	for mode, s := range decodeSubmitted(t, data) {
		if s.Posture != detector.FailClosed || s.Idempotent || !reflect.DeepEqual(s.Requires, events.Requires{}) {
			t.Errorf("%s: Decode(minimal) = posture %q, idempotent %v, requires %+v; want fail-closed, false, zero", mode, s.Posture, s.Idempotent, s.Requires)
		}
		want := detector.Requirements{SkillID: "summarize", Posture: detector.FailClosed}
		if got := s.Requirements(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Requirements() = %+v, want %+v", mode, got, want)
		}
	}
	// Requires present but empty, or partly given: absent members are not
	// required.
	for mode, s := range decodeSubmitted(t, `{"taskId":"t1","agentUrl":"https://a.example","skillId":"s","requires":{"streaming":true},"idempotent":true}`) {
		want := detector.Requirements{SkillID: "s", Streaming: true, Posture: detector.FailClosed, Idempotent: true}
		if got := s.Requirements(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Requirements() = %+v, want %+v", mode, got, want)
		}
	}
}

// TestDecodeRequiresScopesExtensions maps the optional requires members
// scopes, extensions and extendedCard onto detector.Requirements.
func TestDecodeRequiresScopesExtensions(t *testing.T) {
	const data = `{"taskId":"t1","agentUrl":"https://a.example","skillId":"book","posture":"degrade","idempotent":true,
"requires":{"security":["oauth"],"scopes":{"oauth":["flights:read","flights:book"],"apiKey":[]},"extensions":["https://x.example/ext/v1"],"extendedCard":true}}`
	want := detector.Requirements{
		SkillID: "book", Security: []string{"oauth"},
		Scopes:       map[string][]string{"oauth": {"flights:read", "flights:book"}, "apiKey": {}},
		Extensions:   []string{"https://x.example/ext/v1"},
		ExtendedCard: true, Posture: detector.Degrade, Idempotent: true,
	}
	for mode, s := range decodeSubmitted(t, data) {
		if got := s.Requirements(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Requirements() = %+v, want %+v", mode, got, want)
		}
	}
	// An empty scopes object says "no scopes", which is not "did not say".
	for mode, s := range decodeSubmitted(t, `{"taskId":"t1","agentUrl":"https://a.example","skillId":"s","requires":{"scopes":{}}}`) {
		if got := s.Requirements().Scopes; got == nil || len(got) != 0 {
			t.Errorf("%s: Requirements().Scopes = %#v, want an empty non-nil map", mode, got)
		}
	}
}

// TestEncodeSubmittedDefaults: a Submitted built in Go with only the
// required fields encodes as a valid event (no empty posture on the wire),
// and every requires member survives a round trip.
func TestEncodeSubmittedDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    events.Submitted
		want string // the data as encoded
	}{
		{
			"minimal",
			events.Submitted{TaskID: "t1", AgentURL: "https://a.example", SkillID: "s"},
			`{"taskId":"t1","agentUrl":"https://a.example","skillId":"s","idempotent":false}`,
		},
		{
			"scopes with a nil list",
			events.Submitted{TaskID: "t1", AgentURL: "https://a.example", SkillID: "s", Posture: detector.Degrade,
				Requires: events.Requires{Scopes: map[string][]string{"oauth": nil, "other": {"a"}}, Extensions: []string{"urn:x"}, ExtendedCard: true}},
			`{"taskId":"t1","agentUrl":"https://a.example","skillId":"s","requires":{"streaming":false,"pushNotifications":false,"scopes":{"oauth":[],"other":["a"]},"extensions":["urn:x"],"extendedCard":true},"posture":"degrade","idempotent":false}`,
		},
		{
			"empty scopes",
			events.Submitted{TaskID: "t1", AgentURL: "https://a.example", SkillID: "s", Requires: events.Requires{Scopes: map[string][]string{}}},
			`{"taskId":"t1","agentUrl":"https://a.example","skillId":"s","requires":{"streaming":false,"pushNotifications":false,"scopes":{}},"idempotent":false}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := events.Encode(events.Event{ID: "e1", Source: "urn:test", Data: tc.d}, events.Binary)
			if err != nil {
				t.Fatalf("Encode = %v", err)
			}
			if string(m.Data) != tc.want {
				t.Errorf("Encode data = %s\nwant %s", m.Data, tc.want)
			}
			if err := schemas.Validate(events.TypeSubmitted, m.Data); err != nil {
				t.Errorf("encoded data does not validate: %v", err)
			}
			ev, err := events.Decode(events.NATSMsg(m))
			if err != nil {
				t.Fatalf("Decode = %v", err)
			}
			got := ev.Data.(events.Submitted).Requirements()
			want := tc.d.Requirements()
			if want.Scopes != nil {
				want.Scopes = map[string][]string{}
				for k, v := range tc.d.Requires.Scopes {
					want.Scopes[k] = append([]string{}, v...) // a nil list comes back as []
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded Requirements() = %+v, want %+v", got, want)
			}
		})
	}
}
