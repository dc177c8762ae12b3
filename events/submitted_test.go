package events_test

import (
	"encoding/base64"
	"reflect"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/schemas"
)

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
