package events_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

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
