package track

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/client/clienttest"
	"github.com/carddrift/carddrift/events/publish"
)

// The tests drive a Tracker as an adapter does, with an SDK whose payloads
// are Responses already and whose coded errors are these sentinels: what
// both SDK lines share is tested here once, their mapping (and Resolve,
// which they wrap) in sdk_test.go.
var (
	errInvalidParams = errors.New("invalid params")
	errUnsupported   = errors.New("unsupported content type")
	testSDK          = SDK{
		Inspect: func(p any) Response { r, _ := p.(Response); return r },
		Code: func(err error) (int, bool) {
			return Code(err, []Sentinel{{Err: errInvalidParams, Code: -32602}, {Err: errUnsupported, Code: -32005}})
		},
	}
)

// do runs one call: Begin, then After once per response (an error is the
// call's failure, anything else its payload).
func do(tr *Tracker, ctx context.Context, c *Call, responses ...any) {
	ctx = tr.Begin(ctx, c)
	for _, r := range responses {
		if err, failed := r.(error); failed {
			tr.After(ctx, nil, err)
		} else {
			tr.After(ctx, r, nil)
		}
	}
}

// on is a call of method on task; send a message that creates a task.
func on(method, task string) *Call {
	return &Call{Method: method, BaseURL: "https://agent.example/a2a", TaskID: task}
}

func send(method string, streams, push bool, modes ...string) *Call {
	c := on(method, "")
	c.Send("", streams, push, modes)
	return c
}

func status(task, state string) Response {
	return Response{TaskID: task, Status: &Status{State: state, Terminal: state == "completed" || state == "canceled"}}
}

func artifact(task, id string, mediaTypes ...string) Response {
	return Response{TaskID: task, Artifacts: []Artifact{{ID: id, MediaTypes: mediaTypes}}}
}

// A task from submission to completion: submitted with the plan of the
// call's context (client.WithPlan, over Options.Plan), the card and what the
// call shows; each state once per change, with the status message's skill;
// each artifact once per new media type; forgotten at its terminal state.
func TestLifecycle(t *testing.T) {
	rec := &clienttest.Recorder{}
	raw := []byte(`{"name":"agent","x-vendor":{"kept":true}}`)
	tr := New(rec, client.InterceptorOptions{RawCard: raw, CardURL: "https://agent.example/.well-known/agent-card.json",
		Plan: client.Plan{SkillID: "default-skill"}}, testSDK)
	ctx := client.WithPlan(context.Background(), client.Plan{SkillID: "translate", Posture: detector.Degrade, Idempotent: true,
		Requires: events.Requires{OutputModes: []string{"application/json"}, InputModes: []string{"text/plain"}}})

	ask := status("t1", "input-required")
	ask.Status.SkillID = "pick-language"
	do(tr, ctx, send("stream", true, false, "text/plain", "image/png"),
		status("t1", "submitted"), status("t1", "working"), status("t1", "working"), ask)
	do(tr, ctx, on("stream", "t1"), status("t1", "working"),
		artifact("t1", "a1", "text/plain"), artifact("t1", "a1", "text/plain"), artifact("t1", "a1", "application/json"),
		status("t1", "completed"))
	rec.Expect(t,
		"submitted t1 skill=translate stream=true push=false in=[text/plain image/png] posture=degrade card=true",
		"request t1 stream #1",
		"status t1 submitted",
		"status t1 working",
		"status t1 input-required skill=pick-language",
		"request t1 stream #1",
		"status t1 working",
		"artifact t1 a1 [text/plain]",
		"artifact t1 a1 [application/json]",
		"status t1 completed",
	)
	sub := rec.Events()[0].(events.Submitted)
	if string(sub.Card) != string(raw) || sub.CardURL == "" || sub.AgentURL != "https://agent.example" ||
		sub.Posture != detector.Degrade || !sub.Idempotent || !slices.Equal(sub.Requires.OutputModes, []string{"application/json"}) {
		t.Errorf("submitted = %+v", sub)
	}
	if n := tr.Tasks(); n != 0 {
		t.Errorf("remembers %d tasks after the task completed, want 0", n)
	}
}

// Retries count per task and method; a success resets the count; coded
// errors become a2a.task.error with their code and message (bounded);
// transport errors count but emit no error event.
func TestRetriesAndErrors(t *testing.T) {
	rec := &clienttest.Recorder{}
	tr := New(rec, client.InterceptorOptions{}, testSDK)
	ctx := context.Background()
	do(tr, ctx, send("send", false, false), status("t2", "input-required"))
	rec.Reset()

	long := strings.Repeat("x", 2*MaxMessageBytes)
	do(tr, ctx, on("send", "t2"), fmt.Errorf("bad part: %w", errInvalidParams))
	do(tr, ctx, on("send", "t2"), errors.New("connection reset"))
	do(tr, ctx, on("get", "t2"), status("t2", "input-required"))
	do(tr, ctx, on("send", "t2"), fmt.Errorf("%s: %w", long, errUnsupported))
	do(tr, ctx, on("send", "t2"), status("t2", "working"))
	do(tr, ctx, on("send", "t2"), status("t2", "working"))
	do(tr, ctx, on("push/set", "t2"), errInvalidParams)
	rec.Expect(t,
		"request t2 send #1",
		"error t2 send -32602",
		"request t2 send #2",
		"request t2 get #1",
		"request t2 send #3",
		"error t2 send -32005",
		"request t2 send #4",
		"status t2 working",
		"request t2 send #1",
		"request t2 push/set #1",
		"error t2 push/set -32602",
	)
	evs := rec.Events()
	if e := evs[1].(events.Error); e.Message != "bad part: invalid params" || e.AgentURL != "https://agent.example" {
		t.Errorf("error = %+v, want the error's message", e)
	}
	if e := evs[5].(events.Error); len(e.Message) != MaxMessageBytes {
		t.Errorf("error message of %d bytes, want it cut to %d", len(e.Message), MaxMessageBytes)
	}
}

// A new task whose call fails emits nothing; push configuration is a
// requirement; MarshalCard sends the struct's round trip (and no card when
// the client has none); Options.AgentURL wins; a message reply with no task,
// and calls on no task, emit nothing.
func TestNewTaskVariants(t *testing.T) {
	rec := &clienttest.Recorder{}
	tr := New(rec, client.InterceptorOptions{MarshalCard: true, AgentURL: "https://agents.example/translator"}, testSDK)
	ctx := context.Background()
	do(tr, ctx, send("send", false, false, "application/json"), errInvalidParams)
	if got := rec.Lines(); len(got) != 0 {
		t.Fatalf("a failed new task emitted %v", got)
	}
	c := send("send", false, false, "application/json")
	c.Card = struct {
		Name string `json:"name"`
	}{"plain"}
	do(tr, ctx, c, status("t3", "completed"))
	do(tr, ctx, send("send", false, true, "application/json"), Response{TaskID: "t4"})
	rec.Expect(t,
		"submitted t3 skill= stream=false push=false in=[application/json] posture= card=true",
		"request t3 send #1",
		"status t3 completed",
		"submitted t4 skill= stream=false push=true in=[application/json] posture= card=false",
		"request t4 send #1",
	)
	sub := rec.Events()[0].(events.Submitted)
	if string(sub.Card) != `{"name":"plain"}` || sub.AgentURL != "https://agents.example/translator" {
		t.Errorf("submitted card %s agent %s, want the marshalled struct and Options.AgentURL", sub.Card, sub.AgentURL)
	}
	rec.Reset()
	do(tr, ctx, send("send", false, false), Response{})
	do(tr, ctx, on("card", ""), Response{})
	if got := rec.Lines(); len(got) != 0 {
		t.Errorf("task-less calls emitted %v", got)
	}
}

// A publish that fails never fails the call: every failure reaches
// OnError. After without Begin (another interceptor failed first) is a
// no-op.
func TestPublishErrors(t *testing.T) {
	boom := errors.New("jetstream down")
	var mu sync.Mutex
	var got []error
	tr := New(&clienttest.Recorder{Fail: boom}, client.InterceptorOptions{
		OnError: func(err error) { mu.Lock(); got = append(got, err); mu.Unlock() },
	}, testSDK)
	do(tr, context.Background(), on("get", "t5"), status("t5", "working"))
	if len(got) != 2 || !errors.Is(got[0], boom) || !errors.Is(got[1], boom) {
		t.Errorf("OnError got %v, want two publish errors", got)
	}
	tr.After(context.Background(), nil, errInvalidParams)
	tr.After(context.Background(), status("t5", "failed"), nil)
	if len(got) != 2 {
		t.Errorf("After without Begin published: OnError got %v", got)
	}
}

// A task fetched complete with its artifacts reports the artifacts, then
// the terminal state, and is forgotten.
func TestCompletedTask(t *testing.T) {
	rec := &clienttest.Recorder{}
	tr := New(rec, client.InterceptorOptions{}, testSDK)
	done := status("t6", "completed")
	done.Artifacts = []Artifact{{ID: "a", MediaTypes: []string{"application/pdf"}}}
	do(tr, context.Background(), on("get", "t6"), done)
	rec.Expect(t, "request t6 get #1", "artifact t6 a [application/pdf]", "status t6 completed")
	if n := tr.Tasks(); n != 0 {
		t.Errorf("remembers %d tasks after completion, want 0", n)
	}
}

// The Tracker forgets the oldest tasks beyond MaxTasks.
func TestBoundedMemory(t *testing.T) {
	tr := New(&clienttest.Recorder{}, client.InterceptorOptions{MaxTasks: 3}, testSDK)
	for i := range 10 {
		id := fmt.Sprint("t", i)
		do(tr, context.Background(), on("get", id), status(id, "working"))
	}
	if n := tr.Tasks(); n != 3 {
		t.Errorf("remembers %d tasks, want 3", n)
	}
}

// A call made inside an OpenTelemetry span publishes its lifecycle events —
// errors included — with the span's W3C trace context (traceparent,
// tracestate); a call outside one publishes none; a trace context the
// caller set explicitly wins.
func TestTraceContext(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("vendor=abc")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	const explicit = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	cases := []struct {
		name      string
		ctx       context.Context
		parent    string
		state     string
		published int
	}{
		{"span", ctx, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=abc", 5},
		{"no span", context.Background(), "", "", 5},
		{"explicit", publish.WithTraceContext(ctx, explicit, ""), explicit, "", 5},
	}
	for _, c := range cases {
		rec := &clienttest.Recorder{}
		tr := New(rec, client.InterceptorOptions{}, testSDK)
		do(tr, c.ctx, send("stream", true, false, "text/plain"), status("t1", "submitted"))
		do(tr, c.ctx, on("get", "t1"), errInvalidParams)
		if n := len(rec.Traces()); n != c.published {
			t.Fatalf("%s: %d events, want submitted, request, status, request, error", c.name, n)
		}
		for i, got := range rec.Traces() {
			if got[events.ExtTraceParent] != c.parent || got[events.ExtTraceState] != c.state || (c.parent == "" && got != nil) {
				t.Errorf("%s: event %d published with trace context %v", c.name, i, got)
			}
		}
	}
}
