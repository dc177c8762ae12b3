package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

// TestExtendedCredentialsRemoved: the operator removes an agent's origin
// from the credentials file (re-read on change) while a task is pinned on
// its extended card. The next transition sees only the public card, which
// lacks the extended card's skill: that is not drift (the task never
// planned on the public card) but extended "unavailable" — a card.pinned
// that says so, on the public card — and later transitions are judged on
// the public card like a task submitted without credentials: no card.drift
// until the public card itself changes, and then one.
func TestExtendedCredentialsRemoved(t *testing.T) {
	a := newExtendedAgent(t)
	path := filepath.Join(t.TempDir(), "credentials.json")
	write := func(body string) { must(t, os.WriteFile(path, []byte(body), 0o600)) }
	write(fmt.Sprintf(`{%q: {"headers": {"Authorization": "Bearer %s"}}}`, a.srv.URL, extSecret))
	creds, err := fetcher.OpenCredentials(path, fetcher.CredentialsFileOptions{Reload: time.Millisecond})
	must(t, err)
	r := newRig(t, func(o *worker.Options) { o.Fetch.Credentials = creds })
	ctx := context.Background()
	extDigest, _ := detector.Digest(a.card("summarize", "audit-ledger"))
	pubDigest, _ := detector.Digest(a.card("summarize"))

	must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "ext", AgentURL: a.srv.URL, SkillID: "audit-ledger",
		Requires: events.Requires{ExtendedCard: true, Streaming: true}, Posture: detector.FailClosed}))
	r.Eventually("card.pinned extended", func() bool { return len(r.Out().Events(events.TypePinned, "ext")) == 1 })
	if p := r.Out().Events(events.TypePinned, "ext")[0].Data.(events.Pinned); p.Digest != extDigest || p.Extended != events.ExtendedPinned {
		t.Fatalf("card.pinned %s extended %q, want %s pinned", p.Digest, p.Extended, extDigest)
	}

	// The origin leaves the file (another agent's entry stays).
	write(`{"https://other.example": {"headers": {"Authorization": "Bearer x"}}}`)
	time.Sleep(5 * time.Millisecond)
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ext", AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}))
	r.Eventually("card.pinned unavailable", func() bool { return len(r.Out().Events(events.TypePinned, "ext")) == 2 })
	p := r.Out().Events(events.TypePinned, "ext")[1].Data.(events.Pinned)
	if p.Digest != pubDigest || p.Extended != events.ExtendedUnavailable || p.Source != events.PinFirstFetch {
		t.Errorf("card.pinned after the credentials left: %s extended %q source %s, want %s unavailable first-fetch",
			p.Digest, p.Extended, p.Source, pubDigest)
	}
	// A transition's pin is written after its events are published
	// (task.Result: PinFirst only for submissions), so the store may not
	// show it yet when card.pinned arrives.
	var pin task.Pin
	r.Eventually("the pin on the public card stored", func() bool {
		p, _, err := r.Stores.Pins.Get(ctx, "ext")
		pin = p
		return err == nil && p.Digest == pubDigest
	})
	if pin.Extended != events.ExtendedUnavailable || pin.UsesExtended() {
		t.Errorf("stored pin %s extended %q, want the public card %s, unavailable", pin.Digest, pin.Extended, pubDigest)
	}

	// A second transition on the unchanged public card: still no drift.
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ext", AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}))
	r.Eventually("two requests judged", func() bool {
		return r.Handled(events.TypeRequest, "pinned")+r.Handled(events.TypeRequest, "unchanged") == 2
	})
	if d := r.Out().Drifts("ext"); len(d) != 0 {
		t.Fatalf("card.drift after the credentials left: %+v", d[0])
	}

	// The public card itself changes: that is drift for the task now.
	a.set(func(a *extendedAgent) { a.streamingOff = true })
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ext", AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}))
	r.Eventually("card.drift on the public card", func() bool { return len(r.Out().Drifts("ext")) == 1 })
	if d := r.Out().Drifts("ext")[0]; d.Pinned.Digest != pubDigest || !hasRule(d, detector.RuleStreamingDisabled) || d.Verdict.Action != detector.Abort {
		t.Errorf("card.drift %+v, want abort on streaming-disabled from the public card %s", d, pubDigest)
	}
}
