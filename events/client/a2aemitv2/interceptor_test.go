package a2aemitv2_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/carddrift/carddrift/events/client/a2aemitv2"
	"github.com/carddrift/carddrift/events/client/a2aemitv2/a2aemitv2test"
	"github.com/carddrift/carddrift/events/client/clienttest"
)

// A real a2a-go/v2 error from a real server reaches the interceptor as the
// SDK's sentinel and is reported with the wire code.
func TestInterceptorWireErrorCode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAgent(t, true)
	rec := &recording{}
	cl, _ := newClient(t, ctx, a, rec, a2aemitv2.Options{})
	id, state := stream(t, ctx, cl, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")))
	if state != a2a.TaskStateInputRequired {
		t.Fatalf("first stream ended in %q", state)
	}
	a.SetReject(a2a.NewError(a2a.ErrUnsupportedContentType, "text is no longer accepted"))
	_, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, a2a.TaskInfo{TaskID: id}, a2a.NewTextPart("fr"))})
	if !errors.Is(err, a2a.ErrUnsupportedContentType) {
		t.Fatalf("SendMessage = %v, want the agent's error", err)
	}
	got := rec.Lines()
	want := fmt.Sprintf("error %s SendMessage -32005", id)
	if len(got) == 0 || got[len(got)-1] != want {
		t.Errorf("events %v, want the last to be %q", got, want)
	}
}

// A publish that fails never breaks the client's call: a real a2a-go/v2
// client whose every publish fails gets the agent's answers unchanged, and
// every failure reaches OnError. Before never answers for the agent, After
// without Before is a no-op.
func TestInterceptorPublishErrorsNeverBreakTheCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boom := errors.New("jetstream down")
	rec := &recording{Fail: boom}
	var mu sync.Mutex
	var got []error
	a := newAgent(t, true)
	cl, _ := newClient(t, ctx, a, rec, a2aemitv2.Options{OnError: func(err error) { mu.Lock(); got = append(got, err); mu.Unlock() }})

	id, state := stream(t, ctx, cl, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")))
	if id == "" || state != a2a.TaskStateInputRequired {
		t.Fatalf("stream with failing publishes ended with task %q in %q, want input-required", id, state)
	}
	res, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, a2a.TaskInfo{TaskID: id}, a2a.NewTextPart("fr"))})
	if err != nil {
		t.Fatalf("SendMessage with failing publishes: %v", err)
	}
	if task, isTask := res.(*a2a.Task); !isTask || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Errorf("SendMessage = %#v, want the completed task with its artifact", res)
	}
	if _, err := cl.GetTask(ctx, &a2a.GetTaskRequest{ID: id}); err != nil {
		t.Errorf("GetTask with failing publishes: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(rec.Lines()) || len(got) < 8 {
		t.Errorf("OnError got %d errors for %d publishes, want one per publish", len(got), len(rec.Lines()))
	}
	for _, err := range got {
		if !errors.Is(err, boom) {
			t.Errorf("OnError got %v", err)
		}
	}
	ic := a2aemitv2.New(rec, a2aemitv2.Options{})
	if err := ic.After(context.Background(), &a2aclient.Response{Err: a2a.ErrInternalError}); err != nil {
		t.Errorf("After without Before = %v", err)
	}
}

// recording stands in for the Emitter.
type recording = clienttest.Recorder

var (
	cardJSON      = a2aemitv2test.CardJSON
	cardJSONModes = a2aemitv2test.CardJSONModes
)

// agent is the rig's a2a-go/v2 agent, stopped at the end of the test.
type agent = a2aemitv2test.Agent

func newAgent(t *testing.T, streaming bool) *agent {
	t.Helper()
	a := a2aemitv2test.NewAgent(streaming)
	t.Cleanup(a.Close)
	return a
}

// newClient discovers the agent through carddrift's fetcher and builds an
// a2a-go/v2 client carrying the interceptor, plus the extra interceptors
// given (before it).
func newClient(t *testing.T, ctx context.Context, a *agent, em a2aemitv2.Emitter, opts a2aemitv2.Options, extra ...a2aclient.CallInterceptor) (*a2aclient.Client, *a2aemitv2.ResolvedCard) {
	t.Helper()
	card, err := a2aemitv2.ResolveCard(ctx, clienttest.LoopbackFetcher(t), a.URL())
	if err != nil {
		t.Fatalf("ResolveCard: %v", err)
	}
	opts.RawCard, opts.CardURL = card.Raw, card.URL
	cl, err := a2aclient.NewFromCard(ctx, card.AgentCard, a2aclient.WithCallInterceptors(extra...), a2aemitv2.WithLifecycleEvents(em, opts))
	if err != nil {
		t.Fatalf("NewFromCard: %v", err)
	}
	t.Cleanup(func() { cl.Destroy() })
	return cl, card
}

// stream runs one streaming call to its end and returns the task id and the
// last state seen.
func stream(t *testing.T, ctx context.Context, c *a2aclient.Client, msg *a2a.Message) (a2a.TaskID, a2a.TaskState) {
	t.Helper()
	var id a2a.TaskID
	var state a2a.TaskState
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v", err)
		}
		switch ev := ev.(type) {
		case *a2a.Task:
			id, state = ev.ID, ev.Status.State
		case *a2a.TaskStatusUpdateEvent:
			id, state = ev.TaskID, ev.Status.State
		}
	}
	return id, state
}
