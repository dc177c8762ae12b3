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
