package a2aemitv2_test

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/carddrift/carddrift/events/client/a2aemitv2"
	"github.com/carddrift/carddrift/events/client/a2aemitv2/a2aemitv2test"
	"github.com/carddrift/carddrift/events/client/clienttest"
)

// recording stands in for the Emitter.
type recording = clienttest.Recorder

// call drives the interceptor as the a2a-go/v2 client does: Before, then
// After once per response (a stream has many).
func call(t *testing.T, ic *a2aemitv2.Interceptor, ctx context.Context, method string, card *a2a.AgentCard, payload any, responses ...a2aclient.Response) {
	t.Helper()
	req := &a2aclient.Request{Method: method, BaseURL: "https://agent.example/a2a", ServiceParams: a2aclient.ServiceParams{}, Card: card, Payload: payload}
	ctx, early, err := ic.Before(ctx, req)
	if early != nil || err != nil {
		t.Fatalf("Before = %v, %v: the interceptor must not answer for the agent", early, err)
	}
	for _, resp := range responses {
		resp.Method, resp.BaseURL, resp.Card = method, req.BaseURL, card
		if err := ic.After(ctx, &resp); err != nil {
			t.Fatalf("After: %v", err)
		}
	}
}

func ok(payload any) a2aclient.Response { return a2aclient.Response{Payload: payload} }

func status(task string, st a2a.TaskState) *a2a.TaskStatusUpdateEvent {
	return &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(task), Status: a2a.TaskStatus{State: st}}
}

var streamingCard = &a2a.AgentCard{Name: "agent", Capabilities: a2a.AgentCapabilities{Streaming: true}}

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
