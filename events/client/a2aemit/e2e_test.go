package a2aemit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client/a2aemit"
	"github.com/carddrift/carddrift/events/client/clienttest"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/store/natstest"
)

// a2aAgent is an a2a-go server (a2asrv, JSON-RPC transport) behind an
// httptest server, whose public card can be changed while clients run.
type a2aAgent struct {
	srv    *httptest.Server
	mu     sync.Mutex
	card   []byte
	reject atomic.Value // error: the JSON-RPC error every follow-up message gets, if set
}

// cardJSON is the agent's v0.3 card: one skill, translate, on the JSON-RPC
// interface at url.
func cardJSON(url string, streaming bool, inputModes string) []byte {
	return fmt.Appendf(nil, `{
  "name": "Translator", "description": "translates text", "version": "1.0.0",
  "protocolVersion": "0.3.0", "url": %q, "preferredTransport": "JSONRPC",
  "capabilities": {"streaming": %v},
  "defaultInputModes": [%s], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "translate", "name": "Translate", "description": "translates", "tags": ["text"]}],
  "x-vendor": {"region": "eu"}
}`, url, streaming, inputModes)
}

// translator is a trivial AgentExecutor: a new task asks for the target
// language (input-required); the answer completes it with a text artifact.
type translator struct{}

func (translator) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	if reqCtx.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateSubmitted, nil)); err != nil {
			return err
		}
		ask := a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateInputRequired,
			a2a.NewMessageForTask(a2a.MessageRoleAgent, reqCtx, a2a.TextPart{Text: "into which language?"}))
		ask.Final = true
		return q.Write(ctx, ask)
	}
	if err := q.Write(ctx, a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}
	if err := q.Write(ctx, a2a.NewArtifactEvent(reqCtx, a2a.TextPart{Text: "bonjour"})); err != nil {
		return err
	}
	done := a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateCompleted, nil)
	done.Final = true
	return q.Write(ctx, done)
}

func (translator) Cancel(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	ev := a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// rejecter is a server-side interceptor that fails follow-up messages with
// the agent's configured error, as an agent whose card narrowed would.
type rejecter struct {
	a2asrv.PassthroughCallInterceptor
	a *a2aAgent
}

func (r rejecter) Before(ctx context.Context, cc *a2asrv.CallContext, req *a2asrv.Request) (context.Context, error) {
	if err, _ := r.a.reject.Load().(error); err != nil {
		if p, ok := req.Payload.(*a2a.MessageSendParams); ok && p.Message != nil && p.Message.TaskID != "" {
			return ctx, err
		}
	}
	return ctx, nil
}

func newA2AAgent(t *testing.T) *a2aAgent {
	t.Helper()
	a := &a2aAgent{}
	mux := http.NewServeMux()
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	a.card = cardJSON(a.srv.URL+"/a2a", true, `"text/plain"`)
	handler := a2asrv.NewHandler(translator{}, a2asrv.WithCallInterceptor(rejecter{a: a}))
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(handler))
	mux.HandleFunc(a2aemit.WellKnownPath, func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		card := a.card
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(card)
	})
	return a
}

func (a *a2aAgent) setCard(card []byte) {
	a.mu.Lock()
	a.card = card
	a.mu.Unlock()
}

// newClient discovers the agent and builds an a2a-go client carrying the
// interceptor: the one option an existing client adds.
func newClient(t *testing.T, ctx context.Context, r *servicetest.Rig, a *a2aAgent) *a2aclient.Client {
	t.Helper()
	em := r.Emit
	card, err := a2aemit.ResolveCard(ctx, clienttest.LoopbackFetcher(t), a.srv.URL)
	if err != nil {
		t.Fatalf("ResolveCard: %v", err)
	}
	client, err := a2aclient.NewFromCard(ctx, card.AgentCard, a2aemit.WithLifecycleEvents(em, a2aemit.Options{
		RawCard: card.Raw, CardURL: card.URL,
		OnError: func(err error) { t.Errorf("emit: %v", err) },
	}))
	if err != nil {
		t.Fatalf("NewFromCard: %v", err)
	}
	t.Cleanup(func() { client.Destroy() })
	return client
}

// stream runs one streaming call to its end and returns the task id and the
// last state seen.
func stream(t *testing.T, ctx context.Context, c *a2aclient.Client, msg *a2a.Message) (a2a.TaskID, a2a.TaskState) {
	t.Helper()
	var id a2a.TaskID
	var state a2a.TaskState
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: msg}) {
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

// newE2E is one end-to-end test's world, for a minute: the rig, a planner's
// view of the verdicts, the a2a-go agent, a client carrying the
// interceptor, and a context planning fail-closed translate tasks.
func newE2E(t *testing.T) (ctx context.Context, r *servicetest.Rig, verdicts func(taskID string) []planner.Verdict,
	agent *a2aAgent, client *a2aclient.Client, plan context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	o := servicetest.InMemory("e2e-worker")
	o.Source = "urn:test:a2a-go-client" // the client's events, published by the rig's emitter
	r = servicetest.Start(t, o)
	agent = newA2AAgent(t)
	client = newClient(t, ctx, r, agent)
	plan = a2aemit.WithPlan(ctx, a2aemit.Plan{SkillID: "translate", Posture: detector.FailClosed})
	return ctx, r, r.Verdicts(planner.Options{Durable: "e2e-planner"}), agent, client, plan
}

// An a2a-go client with the interceptor plans a streaming task against the
// agent's card; the vendor turns streaming off while the task waits for
// input; the client streams its answer, and the carddrift worker publishes
// card.drift for the task: abort (fail-closed), streaming-disabled.
func TestEndToEndStreamingDisabledUnderRunningClient(t *testing.T) {
	ctx, r, verdicts, agent, client, pctx := newE2E(t)
	taskID, state := stream(t, pctx, client, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "translate: hello"}))
	if taskID == "" || state != a2a.TaskStateInputRequired {
		t.Fatalf("first stream ended with task %q in %q, want input-required", taskID, state)
	}
	pin := r.WaitPin(string(taskID))
	r.Drained(t, 15*time.Second)
	served := cardJSON(agent.srv.URL+"/a2a", true, `"text/plain"`)
	if want, _ := detector.Digest(served); pin.Digest != want || pin.Source != events.PinClientCard {
		t.Errorf("pin = %s from %s, want the served card's digest %s from the client's card", pin.Digest, pin.Source, want)
	}
	if !pin.Requirements.Streaming || pin.Requirements.SkillID != "translate" || !slices.Equal(pin.Requirements.InputModes, []string{"text/plain"}) {
		t.Errorf("pinned requirements = %+v", pin.Requirements)
	}
	if v := verdicts(string(taskID)); len(v) != 0 {
		t.Fatalf("verdicts before the card changed: %+v", v)
	}

	// The vendor disables streaming; the client still holds its old card and
	// streams its answer.
	agent.setCard(cardJSON(agent.srv.URL+"/a2a", false, `"text/plain"`))
	_, state = stream(t, ctx, client, &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleUser, TaskID: taskID,
		Parts: a2a.ContentParts{a2a.TextPart{Text: "French"}}})
	if state != a2a.TaskStateCompleted {
		t.Errorf("second stream ended in %q, want completed", state)
	}

	natstest.Eventually(t, 20*time.Second, "card.drift for the task", func() bool { return len(verdicts(string(taskID))) > 0 })
	v := verdicts(string(taskID))[0]
	if v.Action != detector.Abort || v.Posture != detector.FailClosed || v.Pinned.Digest != pin.Digest || v.Live.Digest == pin.Digest {
		t.Errorf("verdict = %s/%s pinned %s live %s", v.Action, v.Posture, v.Pinned.Digest, v.Live.Digest)
	}
	if !slices.ContainsFunc(v.Findings, func(f detector.Finding) bool { return f.Rule == detector.RuleStreamingDisabled }) {
		t.Errorf("findings = %+v, want streaming-disabled", v.Findings)
	}
	if v.Trigger.Type != events.TypeRequest || v.Trigger.Source != "urn:test:a2a-go-client" {
		t.Errorf("trigger = %+v, want the client's a2a.task.request", v.Trigger)
	}

	servicetest.Flushed(t, r.Emit, 15*time.Second)
	got := clienttest.Kinds(clienttest.Lifecycle(t, r.JS, r.Config.LifecycleStream, string(taskID)))
	want := []string{
		"submitted skill=translate stream=true push=false in=[text/plain] posture=fail-closed card=true", "request message/stream #1", "status submitted", "status input-required",
		"request message/stream #1", "status working", "artifact [text/plain]", "status completed",
	}
	if !slices.Equal(got, want) {
		t.Errorf("lifecycle events = %v, want %v", got, want)
	}
}

// The write-up's failure sequence with a real client: the agent stops
// accepting text, the client's answer fails with -32602, the client retries
// on its stale card. carddrift judges the error (forced fetch: drift) and
// then the retry (blind-retry).
func TestEndToEndSchemaErrorThenBlindRetry(t *testing.T) {
	ctx, r, verdicts, agent, client, pctx := newE2E(t)
	res, err := client.SendMessage(pctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "translate: hello"})})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("SendMessage = %#v, want a task in input-required", res)
	}
	r.WaitPin(string(task.ID))
	r.Drained(t, 15*time.Second)

	agent.setCard(cardJSON(agent.srv.URL+"/a2a", true, `"application/json"`))
	agent.reject.Store(fmt.Errorf("text parts are no longer accepted: %w", a2a.ErrInvalidParams))
	answer := &a2a.MessageSendParams{Message: &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleUser, TaskID: task.ID,
		Parts: a2a.ContentParts{a2a.TextPart{Text: "French"}}}}
	for range 2 {
		if _, err := client.SendMessage(ctx, answer); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Fatalf("answer: SendMessage = %v, want invalid params", err)
		}
	}

	natstest.Eventually(t, 20*time.Second, "two card.drift for the task", func() bool { return len(verdicts(string(task.ID))) >= 2 })
	vs := verdicts(string(task.ID))
	if v := vs[0]; v.Trigger.Type != events.TypeError || v.Action != detector.Abort || !slices.Contains(detector.RuleIDs(v.Findings), detector.RuleDefaultInputModesChanged) {
		t.Errorf("first verdict: trigger %s action %s rules %v, want the error's abort with default-input-modes-changed", v.Trigger.Type, v.Action, detector.RuleIDs(v.Findings))
	}
	if v := vs[1]; v.Trigger.Type != events.TypeRequest || !slices.Contains(detector.RuleIDs(v.Findings), detector.RuleBlindRetry) {
		t.Errorf("second verdict: trigger %s rules %v, want the retry's blind-retry", v.Trigger.Type, detector.RuleIDs(v.Findings))
	}
	servicetest.Flushed(t, r.Emit, 15*time.Second)
	got := clienttest.Kinds(clienttest.Lifecycle(t, r.JS, r.Config.LifecycleStream, string(task.ID)))
	want := []string{
		"submitted skill=translate stream=false push=false in=[text/plain] posture=fail-closed card=true", "request message/send #1", "status input-required",
		"request message/send #1", "error message/send -32602",
		"request message/send #2", "error message/send -32602",
	}
	if !slices.Equal(got, want) {
		t.Errorf("lifecycle events = %v, want %v", got, want)
	}
}
