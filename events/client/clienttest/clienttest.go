package clienttest

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/store/fetcher"
	"github.com/carddrift/carddrift/store/natstest"
)

// Recorder is a client.Lifecycle that records each event and its trace
// context, failing with Fail when set. Safe for concurrent use.
type Recorder struct {
	Fail error

	mu     sync.Mutex
	evs    []events.Data
	traces []map[string]string
}

var _ client.Lifecycle = (*Recorder)(nil)

func (r *Recorder) add(ctx context.Context, d events.Data) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, d)
	r.traces = append(r.traces, publish.TraceContext(ctx))
	return r.Fail
}

// Submitted, Request, Status, Artifact and Error record d.
func (r *Recorder) Submitted(ctx context.Context, d events.Submitted) error { return r.add(ctx, d) }

func (r *Recorder) Request(ctx context.Context, d events.Request) error { return r.add(ctx, d) }

func (r *Recorder) Status(ctx context.Context, d events.Status) error { return r.add(ctx, d) }

func (r *Recorder) Artifact(ctx context.Context, d events.Artifact) error { return r.add(ctx, d) }

func (r *Recorder) Error(ctx context.Context, d events.Error) error { return r.add(ctx, d) }

// Events returns the events recorded so far.
func (r *Recorder) Events() []events.Data {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

// Traces returns the trace context of each recorded event (nil: none).
func (r *Recorder) Traces() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.traces)
}

// Lines renders the recorded events one per line (Line).
func (r *Recorder) Lines() []string {
	var out []string
	for _, d := range r.Events() {
		out = append(out, Line(d))
	}
	return out
}

// Expect fails t unless the recorded events render as want, in order.
func (r *Recorder) Expect(t testing.TB, want ...string) {
	t.Helper()
	if got := r.Lines(); !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Reset forgets what was recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.evs, r.traces = nil, nil
	r.mu.Unlock()
}

// Line renders one lifecycle event compactly, its task after its kind:
// "request t1 message/stream #1", "error t1 message/send -32602".
func Line(d events.Data) string {
	kind, task, artifact, rest := fields(d)
	return strings.Join(slices.DeleteFunc([]string{kind, task, artifact, rest}, func(s string) bool { return s == "" }), " ")
}

// Kind is Line without the task and the artifact's id, which the agent
// names: "request message/stream #1".
func Kind(d events.Data) string {
	kind, _, _, rest := fields(d)
	return kind + " " + rest
}

func fields(d events.Data) (kind, task, artifact, rest string) {
	switch d := d.(type) {
	case events.Submitted:
		return "submitted", d.TaskID, "", fmt.Sprintf("skill=%s stream=%v push=%v in=%v posture=%s card=%v", d.SkillID,
			d.Requires.Streaming, d.Requires.PushNotifications, d.Requires.InputModes, d.Posture, d.Card != nil)
	case events.Request:
		return "request", d.TaskID, "", fmt.Sprintf("%s #%d", d.Method, d.Attempt)
	case events.Status:
		if d.SkillID != "" {
			return "status", d.TaskID, "", d.State + " skill=" + d.SkillID
		}
		return "status", d.TaskID, "", d.State
	case events.Artifact:
		return "artifact", d.TaskID, d.ArtifactID, fmt.Sprint(d.MediaTypes)
	case events.Error:
		return "error", d.TaskID, "", fmt.Sprintf("%s %d", d.Method, d.Code)
	}
	return fmt.Sprintf("%T", d), "", "", ""
}

// Kinds renders stored lifecycle events (Kind).
func Kinds(evs []events.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, Kind(ev.Data))
	}
	return out
}

// Lifecycle returns the lifecycle events of a task stored in stream.
func Lifecycle(t testing.TB, js jetstream.JetStream, stream, taskID string) []events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Event
	for _, m := range natstest.ReadStream(t, js, stream, int(s.CachedInfo().State.Msgs)) {
		ev, err := events.Decode(m)
		if err != nil {
			t.Fatalf("lifecycle event does not decode: %v", err)
		}
		if ev.TaskID() == taskID {
			out = append(out, ev)
		}
	}
	return out
}

// LoopbackFetcher is a Fetcher that lets loopback agents in, closed with t.
func LoopbackFetcher(t testing.TB) *fetcher.Fetcher {
	t.Helper()
	f, err := fetcher.New(fetcher.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
