package events_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/jcs"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/schemas"
	"github.com/carddrift/carddrift/store/fetcher"
)

const (
	reqData    = `{"taskId":"t1","agentUrl":"https://a.example","method":"message/stream","attempt":1}`
	reqSchema  = "https://carddrift.dev/schemas/a2a.task.request/v1.json"
	structured = events.ContentTypeStructured
)

func binHeaders(kv ...string) nats.Header {
	h := nats.Header{
		"ce-specversion": {"1.0"},
		"ce-id":          {"e1"},
		"ce-source":      {"urn:test"},
		"ce-type":        {events.TypeRequest},
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<delete>" {
			delete(h, kv[i])
			continue
		}
		h[kv[i]] = []string{kv[i+1]}
	}
	return h
}

func msg(h nats.Header, data string) events.Msg {
	return events.NATSMsg(&nats.Msg{Subject: "a2a.task.request.t1", Header: h, Data: []byte(data)})
}

func structuredMsg(envelope string) events.Msg {
	return msg(nats.Header{"content-type": {structured}}, envelope)
}

func TestDecodeErrors(t *testing.T) {
	long := strings.Repeat(`{"a":`, events.MaxDepth+1) + "1" + strings.Repeat("}", events.MaxDepth+1)
	for _, tc := range []struct {
		name  string
		m     events.Msg
		want  error
		attr  string // DecodeError.Attribute, if checked
		field string // DecodeError.Field, for schema violations
	}{
		{"no headers", msg(nil, reqData), events.ErrMalformedEnvelope, "ce-specversion", ""},
		{"plain json content-type", msg(nats.Header{"content-type": {"application/json"}}, reqData), events.ErrMalformedEnvelope, "ce-specversion", ""},
		{"specversion 0.3", msg(binHeaders("ce-specversion", "0.3"), reqData), events.ErrMalformedEnvelope, "specversion", ""},
		{"no id", msg(binHeaders("ce-id", "<delete>"), reqData), events.ErrMalformedEnvelope, "id", ""},
		{"empty source", msg(binHeaders("ce-source", ""), reqData), events.ErrMalformedEnvelope, "source", ""},
		{"source not a URI", msg(binHeaders("ce-source", "a%20b"), reqData), events.ErrMalformedEnvelope, "source", ""},
		{"no type", msg(binHeaders("ce-type", "<delete>"), reqData), events.ErrMalformedEnvelope, "type", ""},
		{"bad time", msg(binHeaders("ce-time", "yesterday"), reqData), events.ErrMalformedEnvelope, "ce-time", ""},
		{"leap second time", msg(binHeaders("ce-time", "2026-06-30T23:59:60Z"), reqData), events.ErrMalformedEnvelope, "ce-time", ""},
		{"repeated header", msg(func() nats.Header { h := binHeaders(); h["ce-id"] = []string{"a", "b"}; return h }(), reqData), events.ErrMalformedEnvelope, "ce-id", ""},
		{"bad percent escape", msg(binHeaders("ce-subject", "t%zz"), reqData), events.ErrMalformedEnvelope, "ce-subject", ""},
		{"invalid UTF-8 header", msg(binHeaders("ce-subject", "t%FF"), reqData), events.ErrMalformedEnvelope, "ce-subject", ""},
		{"bad extension name", msg(binHeaders("ce-trace_parent", "x"), reqData), events.ErrMalformedEnvelope, "trace_parent", ""},
		{"data header", msg(binHeaders("ce-data", "x"), reqData), events.ErrMalformedEnvelope, "data", ""},
		{"data_base64 header", msg(binHeaders("ce-data_base64", "e30="), reqData), events.ErrMalformedEnvelope, "data_base64", ""},
		{"text datacontenttype", msg(binHeaders("ce-datacontenttype", "text/plain"), reqData), events.ErrMalformedEnvelope, "datacontenttype", ""},
		{"unknown type", msg(binHeaders("ce-type", "a2a.task.teleported"), reqData), events.ErrUnknownType, "type", ""},
		{"unknown dataschema", msg(binHeaders("ce-dataschema", "https://carddrift.dev/schemas/a2a.task.request/v2.json"), reqData), events.ErrUnknownType, "dataschema", ""},
		{"dataschema of another type", msg(binHeaders("ce-dataschema", schemas.ID(events.TypeStatus, 1)), reqData), events.ErrMalformedEnvelope, "dataschema", ""},
		{"subject is not the task", msg(binHeaders("ce-subject", "t2"), reqData), events.ErrMalformedEnvelope, "subject", ""},
		{"data not JSON", msg(binHeaders(), `{"taskId":`), events.ErrMalformedEnvelope, "data", ""},
		{"data with duplicate key", msg(binHeaders(), `{"taskId":"t1","taskId":"t2","agentUrl":"https://a.example","method":"m","attempt":1}`), events.ErrMalformedEnvelope, "data", ""},
		{"data with invalid UTF-8", msg(binHeaders(), "{\"taskId\":\"t\xff\",\"agentUrl\":\"https://a.example\",\"method\":\"m\",\"attempt\":1}"), events.ErrMalformedEnvelope, "data", ""},
		{"data with lone surrogate", msg(binHeaders(), `{"taskId":"\ud800","agentUrl":"https://a.example","method":"m","attempt":1}`), events.ErrMalformedEnvelope, "data", ""},
		{"data too deep", msg(binHeaders(), long), events.ErrMalformedEnvelope, "data", ""},
		{"no data", msg(binHeaders(), ""), events.ErrSchemaViolation, "data", ""},
		{"data array", msg(binHeaders(), `[]`), events.ErrSchemaViolation, "", ""},
		{"attempt 0", msg(binHeaders(), `{"taskId":"t1","agentUrl":"https://a.example","method":"m","attempt":0}`), events.ErrSchemaViolation, "", "/attempt"},
		{"attempt beyond int", msg(binHeaders(), `{"taskId":"t1","agentUrl":"https://a.example","method":"m","attempt":1e30}`), events.ErrSchemaViolation, "", "/attempt"},
		{"unknown member", msg(binHeaders(), `{"taskId":"t1","agentUrl":"https://a.example","method":"m","attempt":1,"extra":true}`), events.ErrSchemaViolation, "", "/extra"},

		{"structured batch", msg(nats.Header{"content-type": {"application/cloudevents-batch+json"}}, `[]`), events.ErrMalformedEnvelope, "content-type", ""},
		{"structured not an object", structuredMsg(`"x"`), events.ErrMalformedEnvelope, "", ""},
		{"structured trailing data", structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request","data":` + reqData + `} {}`), events.ErrMalformedEnvelope, "", ""},
		{"structured repeated member", structuredMsg(`{"specversion":"1.0","id":"e1","id":"e2","source":"urn:test","type":"a2a.task.request","data":` + reqData + `}`), events.ErrMalformedEnvelope, "id", ""},
		{"structured repeated extension", structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request","ext":null,"ext":"x","data":` + reqData + `}`), events.ErrMalformedEnvelope, "ext", ""},
		{"structured id not a string", structuredMsg(`{"specversion":"1.0","id":1,"source":"urn:test","type":"a2a.task.request","data":` + reqData + `}`), events.ErrMalformedEnvelope, "id", ""},
		{"structured no specversion", structuredMsg(`{"id":"e1","source":"urn:test","type":"a2a.task.request","data":` + reqData + `}`), events.ErrMalformedEnvelope, "specversion", ""},
		{"structured object extension", structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request","ext":{},"data":` + reqData + `}`), events.ErrMalformedEnvelope, "ext", ""},
		{"structured data and data_base64", structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request","data_base64":"e30=","data":` + reqData + `}`), events.ErrMalformedEnvelope, "data_base64", ""},
		{"structured bad base64", structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request","data_base64":"!!"}`), events.ErrMalformedEnvelope, "data_base64", ""},
		{"structured no data", structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request"}`), events.ErrSchemaViolation, "data", ""},
		{"structured null data", structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request","data":null}`), events.ErrSchemaViolation, "", ""},
		{"structured missing method", structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request","data":{"taskId":"t1","agentUrl":"https://a.example","attempt":1}}`), events.ErrSchemaViolation, "", "/method"},
		{"structured leap second in data", structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"card.observed","data":{"agentUrl":"https://a.example","cardUrl":"https://a.example/c","digest":"` + digestA + `","status":200,"fetchedAt":"2026-06-30T23:59:60Z","latencyMs":1}}`), events.ErrSchemaViolation, "", "/fetchedAt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := events.Decode(tc.m)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %+v, %v; want %v", ev, err, tc.want)
			}
			var de *events.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error %T is not a *DecodeError", err)
			}
			if tc.attr != "" && de.Attribute != tc.attr {
				t.Errorf("Decode = %v: Attribute %q, want %q", err, de.Attribute, tc.attr)
			}
			if tc.want == events.ErrSchemaViolation {
				var verr *schemas.ValidationError
				if !errors.As(err, &verr) {
					t.Errorf("Decode = %v, want a *schemas.ValidationError in the chain", err)
				} else if verr.Field != tc.field || de.Field != tc.field {
					t.Errorf("Decode = %v: field %q (DecodeError %q), want %q", err, verr.Field, de.Field, tc.field)
				}
			}
			if !strings.HasPrefix(err.Error(), "events: decode") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    events.Msg
		want events.Request
		ext  map[string]string
	}{
		{"binary minimal", msg(binHeaders(), reqData), events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "message/stream", Attempt: 1}, nil},
		{"binary content-type as datacontenttype", msg(binHeaders("content-type", "application/json; charset=utf-8"), reqData), events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "message/stream", Attempt: 1}, nil},
		{"binary +json datacontenttype", msg(binHeaders("ce-datacontenttype", "application/vnd.carddrift+json"), reqData), events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "message/stream", Attempt: 1}, nil},
		{"binary extension and other headers", msg(binHeaders("ce-traceparent", "00-ab-cd-01", "Nats-Msg-Id", "x", "Ce-Id", "ignored"), reqData), events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "message/stream", Attempt: 1}, map[string]string{"traceparent": "00-ab-cd-01"}},
		{"attempt 2.0 is an integer", msg(binHeaders(), `{"taskId":"t1","agentUrl":"https://a.example","method":"m","attempt":2.0}`), events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "m", Attempt: 2}, nil},
		{"unknown method", msg(binHeaders(), `{"taskId":"t1","agentUrl":"https://a.example","method":"tasks/teleport","attempt":1}`), events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "tasks/teleport", Attempt: 1}, nil},
		{"structured with whitespace, nulls and scalar extensions", structuredMsg(" {\n \"specversion\" : \"1.0\", \"id\":\"e1\",\"source\":\"urn:test\",\"type\":\"a2a.task.request\",\"subject\":null,\"n\":3,\"b\":true,\"data\" : " + reqData + "}\n"), events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "message/stream", Attempt: 1}, map[string]string{"n": "3", "b": "true"}},
		{"structured data_base64", structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.request","data_base64":"` + base64.StdEncoding.EncodeToString([]byte(reqData)) + `"}`), events.Request{TaskID: "t1", AgentURL: "https://a.example", Method: "message/stream", Attempt: 1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := events.Decode(tc.m)
			if err != nil {
				t.Fatalf("Decode = %v", err)
			}
			if got, ok := ev.Data.(events.Request); !ok || canonical(t, got) != canonical(t, tc.want) {
				t.Errorf("Decode data = %#v, want %#v", ev.Data, tc.want)
			}
			if len(ev.Extensions) != len(tc.ext) {
				t.Errorf("Decode extensions = %v, want %v", ev.Extensions, tc.ext)
			}
			for k, v := range tc.ext {
				if ev.Extensions[k] != v {
					t.Errorf("extension %s = %q, want %q", k, ev.Extensions[k], v)
				}
			}
			if ev.DataSchema != "" && ev.DataSchema != reqSchema {
				t.Errorf("DataSchema = %q", ev.DataSchema)
			}
		})
	}
}

// TestDecodeCardBytes checks that a submitted card reaches the caller byte
// for byte as it was in the message, in every mode.
func TestDecodeCardBytes(t *testing.T) {
	card := `{ "name" : "A",  "skills":[ {"id":"s"} ], "x": "\u00e9" }`
	data := `{"taskId":"t1","agentUrl":"https://a.example","skillId":"s","requires":{"streaming":false,"pushNotifications":false},"posture":"degrade","idempotent":true,"card":` + card + `}`
	sub := binHeaders("ce-type", events.TypeSubmitted)
	for name, m := range map[string]events.Msg{
		"binary":            msg(sub, data),
		"structured":        structuredMsg(`{"data":` + data + `,"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.submitted"}`),
		"structured base64": structuredMsg(`{"specversion":"1.0","id":"e1","source":"urn:test","type":"a2a.task.submitted","data_base64":"` + base64.StdEncoding.EncodeToString([]byte(data)) + `"}`),
	} {
		ev, err := events.Decode(m)
		if err != nil {
			t.Fatalf("%s: Decode = %v", name, err)
		}
		s := ev.Data.(events.Submitted)
		if string(s.Card) != card {
			t.Errorf("%s: Card = %s, want %s", name, s.Card, card)
		}
		if r := s.Requirements(); r.SkillID != "s" || r.Posture != "degrade" || !r.Idempotent {
			t.Errorf("%s: Requirements() = %+v", name, r)
		}
	}
}

// TestDecodeSchemaExamples runs every data example of package schemas
// through Decode in both modes: valid ones decode, invalid ones fail with
// ErrSchemaViolation naming the same field as schemas.Validate.
func TestDecodeSchemaExamples(t *testing.T) {
	for _, typ := range events.Types {
		valid, _ := filepath.Glob(filepath.Join("..", "schemas", "testdata", typ, "valid", "*.json"))
		invalid, _ := filepath.Glob(filepath.Join("..", "schemas", "testdata", typ, "invalid", "*.json"))
		if len(valid) == 0 || len(invalid) == 0 {
			t.Fatalf("%s: no examples in ../schemas/testdata", typ)
		}
		check := func(f string, data []byte, wantField *string) {
			subject := ""
			var probe struct {
				TaskID any `json:"taskId"`
			}
			_ = json.Unmarshal(data, &probe)
			if s, ok := probe.TaskID.(string); ok && s != "" {
				subject = s
			}
			envelope := map[string]any{"specversion": "1.0", "id": "e1", "source": "urn:test", "type": typ, "data": json.RawMessage(data)}
			if subject != "" {
				envelope["subject"] = subject
			}
			st, _ := json.Marshal(envelope)
			h := binHeaders("ce-type", typ)
			if subject != "" {
				h["ce-subject"] = []string{escape(subject)}
			}
			for mode, m := range map[string]events.Msg{"binary": msg(h, string(data)), "structured": structuredMsg(string(st))} {
				ev, err := events.Decode(m)
				if wantField == nil {
					if err != nil {
						t.Errorf("%s (%s): Decode = %v", f, mode, err)
					} else if ev.Type != typ {
						t.Errorf("%s (%s): Type = %s", f, mode, ev.Type)
					}
					continue
				}
				var de *events.DecodeError
				if !errors.Is(err, events.ErrSchemaViolation) || !errors.As(err, &de) || de.Field != *wantField {
					t.Errorf("%s (%s): Decode = %v, want schema violation at %s", f, mode, err, *wantField)
				}
			}
		}
		for _, f := range valid {
			data, _ := os.ReadFile(f)
			check(f, data, nil)
		}
		for _, f := range invalid {
			raw, _ := os.ReadFile(f)
			var ex struct {
				Field string          `json:"field"`
				Data  json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(raw, &ex); err != nil {
				t.Fatal(err)
			}
			check(f, ex.Data, &ex.Field)
		}
	}
}

// escape percent-encodes a header value as Encode does.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '%' {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// TestDecodeConcurrent decodes the samples from several goroutines (run
// with -race: the schemas, the intern tables and the source cache are
// shared).
func TestDecodeConcurrent(t *testing.T) {
	var msgs []events.Msg
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		for i, d := range samples() {
			m, err := events.Encode(events.Event{ID: "c" + strings.Repeat("x", i), Source: "urn:test:" + mode.String(), Data: d}, mode)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, events.NATSMsg(m))
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				for _, m := range msgs {
					if _, err := events.Decode(m); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestDecodeSyntaxError checks that data that is not JSON leaves the
// scanner's *jcs.SyntaxError, with its offset, in the error chain.
func TestDecodeSyntaxError(t *testing.T) {
	_, err := events.Decode(msg(binHeaders(), `{"taskId":"t1","taskId":"t2"}`))
	var se *jcs.SyntaxError
	if !errors.Is(err, events.ErrMalformedEnvelope) || !errors.Is(err, jcs.ErrDuplicateKey) || !errors.As(err, &se) || se.Offset != 15 {
		t.Errorf("Decode = %v; want ErrMalformedEnvelope and a *jcs.SyntaxError wrapping ErrDuplicateKey at byte 15", err)
	}
}

// A card.observed as contract v1.2 published it (no fetches, no since)
// still decodes, standing for its own fetch; a v1.3 one carries both.
func TestDecodeObservedV12AndV13(t *testing.T) {
	for _, tc := range []struct {
		file    string
		fetches int
		since   string
	}{
		{"fetch.json", 0, ""},
		{"heartbeat.json", 150, "2026-05-01T10:00:02Z"},
	} {
		data, err := os.ReadFile(filepath.Join("..", "schemas", "testdata", "card.observed", "valid", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.Decode(msg(binHeaders("ce-type", events.TypeObserved), string(data)))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		d := ev.Data.(events.Observed)
		since := ""
		if !d.Since.IsZero() {
			since = d.Since.Format(time.RFC3339)
		}
		if d.Fetches != tc.fetches || since != tc.since || d.Digest == "" {
			t.Errorf("%s: fetches %d since %q digest %q; want %d since %q", tc.file, d.Fetches, since, d.Digest, tc.fetches, tc.since)
		}
	}
}

// Numbers with huge exponents cost the checks no more than small ones:
// big.Rat would take milliseconds for each 1e1000000, here thousands of
// them, in an array of strings and in the integer fields of a request.
func TestDecodeHugeExponents(t *testing.T) {
	huge := strings.TrimSuffix(strings.Repeat("1e1000000,", 5000), ",")
	for _, tc := range []struct{ typ, data, field string }{
		{events.TypeArtifact, `{"taskId":"t1","agentUrl":"https://a.example","artifactId":"a","mediaTypes":[` + huge + `]}`, "/mediaTypes"},
		{events.TypeRequest, `{"taskId":"t1","agentUrl":"https://a.example","method":"m","attempt":1e1000000}`, "/attempt"},
		{events.TypeRequest, `{"taskId":"t1","agentUrl":"https://a.example","method":"m","attempt":-1e1000000}`, "/attempt"},
		{events.TypeRequest, `{"taskId":"t1","agentUrl":"https://a.example","method":"m","attempt":1e-1000000}`, "/attempt"},
	} {
		_, err := events.Decode(msg(binHeaders("ce-type", tc.typ), tc.data))
		var de *events.DecodeError
		if !errors.As(err, &de) || !errors.Is(err, events.ErrSchemaViolation) || de.Field != tc.field {
			t.Errorf("%s %.80s: Decode = %v, want a violation of %s", tc.typ, tc.data, err, tc.field)
		}
	}
}

// encodeData encodes d in both modes and returns the data of the binary
// message, failing the test if either mode fails or the data does not
// validate.
func encodeData(t *testing.T, d events.Data) map[string]any {
	t.Helper()
	var data []byte
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		m, err := events.Encode(events.Event{ID: "e1", Source: "urn:test", Data: d}, mode)
		if err != nil {
			t.Fatalf("Encode(%T, %s) = %v", d, mode, err)
		}
		if mode == events.Binary {
			data = m.Data
		}
		if _, err := events.Decode(events.NATSMsg(m)); err != nil {
			t.Fatalf("Decode(Encode(%T, %s)) = %v", d, mode, err)
		}
	}
	if err := schemas.Validate(d.EventType(), data); err != nil {
		t.Fatalf("encoded %s does not validate: %v", d.EventType(), err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEncodeUnknownPinnedBody: a client-digest pin whose card body carddrift
// never saw has no fingerprint. Its card.pinned and card.drift encode (the
// first write-up's case used to be refused by the schemas), with the
// fingerprint absent rather than "".
func TestEncodeUnknownPinnedBody(t *testing.T) {
	pinned := encodeData(t, events.Pinned{TaskID: "t1", AgentURL: "https://a.example", Digest: digestA, Source: events.PinClientDigest,
		Trigger: events.Trigger{EventID: "e0", Type: events.TypeSubmitted, Source: "urn:client"}})
	if _, ok := pinned["fingerprint"]; ok {
		t.Errorf("card.pinned data = %v, want no fingerprint", pinned)
	}

	drift := encodeData(t, events.Drift{
		TaskID: "t1", AgentURL: "https://a.example", CardURL: "https://a.example/.well-known/agent-card.json",
		Pinned: events.CardRef{Digest: digestA},
		Live:   events.CardRef{Digest: digestB, Fingerprint: fpB, FetchedAt: t0},
		Findings: []detector.Finding{{Rule: detector.RulePinnedCardUnknown, Severity: detector.Breaking, Before: digestA, After: digestB,
			Message: "unknown", Touches: true}},
		Verdict: detector.Verdict{Action: detector.Abort, Posture: detector.FailClosed, Reason: "fail-closed"},
		Trigger: events.Trigger{EventID: "e1", Type: events.TypeRequest},
	})
	if p := drift["pinned"].(map[string]any); len(p) != 1 || p["digest"] != digestA {
		t.Errorf("card.drift pinned = %v, want only the digest", p)
	}
	if l := drift["live"].(map[string]any); l["fingerprint"] != fpB {
		t.Errorf("card.drift live = %v, want its fingerprint", l)
	}

	// Only a client-digest pin may lack the fingerprint.
	for _, src := range []string{events.PinClientCard, events.PinFirstFetch} {
		_, err := events.Encode(events.Event{ID: "e1", Source: "urn:test", Data: events.Pinned{TaskID: "t1", AgentURL: "https://a.example", Digest: digestA, Source: src}}, events.Binary)
		var verr *schemas.ValidationError
		if !errors.Is(err, events.ErrSchemaViolation) || !errors.As(err, &verr) || verr.Field != "/fingerprint" {
			t.Errorf("Encode(card.pinned %s without fingerprint) = %v, want a schema violation at /fingerprint", src, err)
		}
	}
}

// TestEncodeTouchesAlways: every finding of an encoded card.drift carries
// touches, false included.
func TestEncodeTouchesAlways(t *testing.T) {
	d := samples()[5].(events.Drift)
	data := encodeData(t, d)
	fs := data["findings"].([]any)
	if len(fs) != len(d.Findings) {
		t.Fatalf("encoded %d findings, want %d", len(fs), len(d.Findings))
	}
	for i, f := range fs {
		touches, ok := f.(map[string]any)["touches"].(bool)
		if !ok || touches != d.Findings[i].Touches {
			t.Errorf("finding %d: touches = %v (present %v), want %v", i, f.(map[string]any)["touches"], ok, d.Findings[i].Touches)
		}
	}
}

// TestDecodeTouchesKnown: Decode reports whether the findings carried
// touches. card.drift events written before contract v1.1 lack it; they
// still decode (the schema keeps touches optional within v1).
func TestDecodeTouchesKnown(t *testing.T) {
	for _, tc := range []struct {
		file string
		want bool
		// touching lists the rules whose findings touch the task.
		touching []string
	}{
		{"abort.json", false, nil}, // written before contract v1.1
		{"continue-no-findings.json", true, nil},
		{"pinned-card-unknown.json", true, []string{detector.RulePinnedCardUnknown}},
		{"touches-scope-extension.json", true, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "schemas", "testdata", events.TypeDrift, "valid", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			h := binHeaders("ce-type", events.TypeDrift, "ce-subject", "<delete>")
			ev, err := events.Decode(msg(h, string(data)))
			if err != nil {
				t.Fatalf("Decode = %v", err)
			}
			d := ev.Data.(events.Drift)
			if d.TouchesKnown != tc.want {
				t.Errorf("TouchesKnown = %v, want %v", d.TouchesKnown, tc.want)
			}
			var touching []string
			for _, f := range d.Findings {
				if f.Touches {
					touching = append(touching, f.Rule)
				}
			}
			if len(touching) != len(tc.touching) || (len(touching) > 0 && touching[0] != tc.touching[0]) {
				t.Errorf("touching rules = %v, want %v", touching, tc.touching)
			}
		})
	}
	// Scope and extension come back as sent.
	ev := events.Event{ID: "e1", Source: "urn:test", Time: time.Unix(0, 0), Data: samples()[5]}
	m, err := events.Encode(ev, events.Structured)
	if err != nil {
		t.Fatal(err)
	}
	got, err := events.Decode(events.NATSMsg(m))
	if err != nil {
		t.Fatal(err)
	}
	d := got.Data.(events.Drift)
	if !d.TouchesKnown || d.Findings[2].Scope != "seats:admin" || d.Findings[3].Extension != "urn:ext:x" || !d.Findings[0].Touches {
		t.Errorf("decoded findings = %+v, want touches, scope and extension as sent", d.Findings)
	}
}

// TestReplanSkillRoundTrip: a card.drift whose verdict re-plans a degrade
// task onto a renamed skill (verdict.replanSkill, since contract v1.2) keeps
// it through Encode and Decode in both modes, and its data validates; a
// verdict without one has no replanSkill member.
func TestReplanSkillRoundTrip(t *testing.T) {
	d := samples()[5].(events.Drift)
	d.Findings = []detector.Finding{{
		Rule: detector.RuleSkillRenamed, Severity: detector.Breaking, Path: "/skills/0/id",
		Before: "summarize", After: "summarize-v2", Message: "renamed", Skill: "summarize", Touches: true,
	}}
	d.Verdict = detector.Verdict{Action: detector.Replan, Posture: detector.Degrade, Reason: "renamed", ReplanSkill: "summarize-v2"}
	for _, mode := range []events.Mode{events.Binary, events.Structured} {
		m, err := events.Encode(events.Event{ID: "e1", Source: "urn:test", Time: time.Unix(0, 0), Data: d}, mode)
		if err != nil {
			t.Fatalf("%s: Encode: %v", mode, err)
		}
		got, err := events.Decode(events.NATSMsg(m))
		if err != nil {
			t.Fatalf("%s: Decode: %v", mode, err)
		}
		gd := got.Data.(events.Drift)
		if gd.Verdict.ReplanSkill != d.Verdict.ReplanSkill || gd.Verdict.Action != d.Verdict.Action {
			t.Errorf("%s: decoded verdict %+v, want %+v", mode, gd.Verdict, d.Verdict)
		}
		if err := schemas.Validate(events.TypeDrift, []byte(canonical(t, gd))); err != nil {
			t.Errorf("%s: decoded data does not validate: %v", mode, err)
		}
	}
	plain := samples()[5].(events.Drift)
	if s := canonical(t, plain); strings.Contains(s, "replanSkill") {
		t.Errorf("a verdict without a replan skill encodes one: %s", s)
	}
}

// One split-brain episode is one card.inconsistent: the id depends on the
// card URL and the episode's start, not on the counts of a later snapshot
// nor on which worker publishes it.
func TestInconsistentMsgID(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	a, b := digestA, digestB
	ev := func(episode time.Time, countA int, cardURL string) events.Inconsistent {
		return events.Inconsistent{AgentURL: "https://agent.example", CardURL: cardURL, Episode: episode, Window: events.Duration(time.Minute),
			Digests: []events.DigestSeen{{Digest: a, Count: countA, FirstSeen: t0, LastSeen: t0}, {Digest: b, Count: 2, FirstSeen: t0, LastSeen: t0}}}
	}
	card := "https://agent.example/.well-known/agent-card.json"
	first := events.MsgID(ev(t0, 2, card))
	if first == "" || first[:len("inconsistent-")] != "inconsistent-" {
		t.Fatalf("MsgID = %q", first)
	}
	if got := events.MsgID(ev(t0, 9, card)); got != first {
		t.Errorf("a later snapshot of the same episode has id %s, want %s", got, first)
	}
	if got := events.MsgID(ev(t0.Add(time.Second), 2, card)); got == first {
		t.Errorf("another episode has the same id")
	}
	if got := events.MsgID(ev(t0, 2, "https://agent.example/.well-known/agent.json")); got == first {
		t.Errorf("another card URL has the same id")
	}
	if s, err := events.Subject(ev(t0, 2, card)); err != nil || s != "card.inconsistent.agent=2Eexample" {
		t.Errorf("Subject = %q, %v", s, err)
	}
}

// TestDecodeWindowBeyondDuration: a card.inconsistent window the schema's
// pattern accepts and time.Duration cannot hold is a violation of the
// window, as a value the Go type cannot hold.
func TestDecodeWindowBeyondDuration(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "schemas", "testdata", events.TypeInconsistent, "valid", "two-replicas.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	d["window"] = "9999999999999h"
	data, _ = json.Marshal(d)
	_, err = events.Decode(msg(binHeaders("ce-type", events.TypeInconsistent, "ce-subject", "<delete>"), string(data)))
	var de *events.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, events.ErrSchemaViolation) || de.Field != "/window" || de.Reason != "not a duration: 9999999999999h" {
		t.Errorf("Decode = %v, want a schema violation of /window: not a duration", err)
	}
}

// TestKnownNamesMatchDetector keeps the documented method and state names
// of the schemas and the detector's lifecycle classification in step.
func TestKnownNamesMatchDetector(t *testing.T) {
	for _, m := range enum(t, events.TypeRequest, "$defs/knownMethods/enum") {
		if detector.ClassifyMethod(m) == detector.MethodUnknown {
			t.Errorf("schema knownMethods has %q, which detector.ClassifyMethod does not know", m)
		}
	}
	for _, s := range enum(t, events.TypeStatus, "$defs/knownStates/enum") {
		if _, ok := detector.NormalizeState(s); !ok {
			t.Errorf("schema knownStates has %q, which detector.NormalizeState does not know", s)
		}
	}
}

// TestUnreachableReasons keeps every published copy of the one reason list
// of card.unreachable (fetcher.UnreachableReasons) equal to it, in order:
// the schema's knownReasons enum and the table of the public contract
// (schemas/README.md), descriptions included.
func TestUnreachableReasons(t *testing.T) {
	var want []string
	for _, r := range fetcher.UnreachableReasons() {
		want = append(want, string(r))
		if r.Description() == "" {
			t.Errorf("reason %q has no description", r)
		}
	}
	if slices.Contains(want, string(fetcher.ReasonCanceled)) {
		t.Errorf("UnreachableReasons() = %v: a canceled fetch is never published", want)
	}
	if got := enum(t, events.TypeUnreachable, "$defs/knownReasons/enum"); !slices.Equal(got, want) {
		t.Errorf("schema knownReasons = %v\nfetcher.UnreachableReasons() = %v", got, want)
	}

	doc, err := os.ReadFile(filepath.Join("..", "schemas", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "### `card.unreachable` reasons\n")
	if !ok {
		t.Fatal("schemas/README.md has no section \"### `card.unreachable` reasons\"")
	}
	var rows []string
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if strings.HasPrefix(line, "| `") {
			rows = append(rows, line)
		}
	}
	var wantRows []string
	for _, r := range fetcher.UnreachableReasons() {
		wantRows = append(wantRows, "| `"+string(r)+"` | "+r.Description()+" |")
	}
	if !slices.Equal(rows, wantRows) {
		t.Errorf("schemas/README.md reasons table:\n%s\nwant (from fetcher.UnreachableReasons):\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
}

// TestSignatureReasons keeps the signer outcomes the schemas document
// (knownSignatureReasons of card.drift and card.pinned) equal to
// signature.Reasons, the one list, in order.
func TestSignatureReasons(t *testing.T) {
	var want []string
	for _, r := range signature.Reasons() {
		want = append(want, string(r))
	}
	for _, typ := range []string{events.TypeDrift, events.TypePinned} {
		if got := enum(t, typ, "$defs/knownSignatureReasons/enum"); !slices.Equal(got, want) {
			t.Errorf("%s knownSignatureReasons = %v\nsignature.Reasons() = %v", typ, got, want)
		}
	}
	if detector.SignatureVerified != string(signature.ReasonVerified) || detector.SignatureInvalid != string(signature.ReasonInvalidSignature) {
		t.Errorf("detector's outcomes %q, %q differ from signature's %q, %q", detector.SignatureVerified, detector.SignatureInvalid,
			signature.ReasonVerified, signature.ReasonInvalidSignature)
	}
}

// TestTypesHaveSchemas checks that every event type has a schema and every
// schema an event type.
func TestTypesHaveSchemas(t *testing.T) {
	var got []string
	for _, s := range schemas.All() {
		got = append(got, s.Type)
	}
	want := slices.Clone(events.Types)
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schema types = %v, event types = %v", got, want)
	}
}

// TestEnumsMatchCode keeps the code's constants for the contract's enums
// equal to the schemas' lists, in order.
func TestEnumsMatchCode(t *testing.T) {
	for _, c := range []struct {
		name       string
		code, want []string
	}{
		{"postures", []string{string(detector.FailClosed), string(detector.Degrade)},
			enum(t, events.TypeSubmitted, "properties/posture/enum")},
		{"actions", []string{string(detector.Abort), string(detector.Replan), string(detector.Continue)},
			enum(t, events.TypeDrift, "properties/verdict/properties/action/enum")},
		{"severities", []string{detector.Breaking.String(), detector.Warning.String(), detector.Info.String()},
			enum(t, events.TypeDrift, "$defs/finding/properties/severity/enum")},
		{"pin sources", []string{events.PinClientCard, events.PinClientDigest, events.PinFirstFetch},
			enum(t, events.TypePinned, "properties/source/enum")},
		{"extended", []string{events.ExtendedPinned, events.ExtendedUnavailable},
			enum(t, events.TypePinned, "properties/extended/enum")},
		{"signer sources", []string{detector.SourceTrusted, detector.SourceJKU},
			enum(t, events.TypeDrift, "$defs/signer/properties/source/enum")},
	} {
		if !slices.Equal(c.code, c.want) {
			t.Errorf("%s: code %v, schema %v", c.name, c.code, c.want)
		}
	}
}

// TestFieldsMatchTypes keeps the members of every event type's data as
// json.Marshal writes them (the Go type's json names) equal to the
// members its schema lists.
func TestFieldsMatchTypes(t *testing.T) {
	for _, d := range []events.Data{events.Submitted{}, events.Request{}, events.Status{}, events.Artifact{}, events.Error{},
		events.Drift{}, events.Pinned{}, events.Observed{}, events.Unreachable{}, events.Inconsistent{}} {
		var names []string
		rt := reflect.TypeOf(d)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name != "-" && name != "" {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		props, _ := schemaAt(t, d.EventType(), "properties").(map[string]any)
		if want := slices.Sorted(maps.Keys(props)); !slices.Equal(names, want) {
			t.Errorf("%s: Go type %T has members %v, the schema %v", d.EventType(), d, names, want)
		}
	}
}

// enum returns the list of strings at pointer (a JSON pointer without its
// leading "/") in the current schema of typ.
func enum(t *testing.T, typ, pointer string) []string {
	t.Helper()
	list, _ := schemaAt(t, typ, pointer).([]any)
	var out []string
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("%s#/%s holds %v, not a string", typ, pointer, v)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		t.Fatalf("%s#/%s is not a list of strings", typ, pointer)
	}
	return out
}

// schemaAt returns the value at pointer in the current schema of typ.
func schemaAt(t *testing.T, typ, pointer string) any {
	t.Helper()
	s, err := schemas.Lookup(typ)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(s.Source(), &v); err != nil {
		t.Fatal(err)
	}
	for _, tok := range strings.Split(pointer, "/") {
		m, _ := v.(map[string]any)
		if v = m[tok]; v == nil {
			t.Fatalf("%s has nothing at #/%s", typ, pointer)
		}
	}
	return v
}
