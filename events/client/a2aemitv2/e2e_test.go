package a2aemitv2_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/client/a2aemitv2"
	"github.com/carddrift/carddrift/events/client/a2aemitv2/a2aemitv2test"
	"github.com/carddrift/carddrift/events/client/clienttest"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/fetcher"
	"github.com/carddrift/carddrift/store/natstest"
)

// waitFor polls cond until it holds or deadline passes, for goroutines that
// are not the test's (the agent's executor): false on timeout.
func waitFor(deadline time.Duration, cond func() bool) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(deadline)
	for !cond() {
		select {
		case <-tick.C:
		case <-timeout:
			return false
		}
	}
	return true
}

// callLog is a client-side interceptor, attached before carddrift's, that
// logs each call the client makes, in one log with the planner's verdicts.
type callLog struct {
	a2aclient.PassthroughInterceptor
	mu  *sync.Mutex
	log *[]string
}

func (l callLog) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	l.mu.Lock()
	*l.log = append(*l.log, "call "+req.Method)
	l.mu.Unlock()
	return ctx, nil, nil
}

// The issue's scenario with real parts: an a2a-go/v2 client carrying the
// interceptor plans a streaming, fail-closed translate task against the
// agent's v1.0 card; the a2a-go/v2 server works on it, and while it works
// the vendor turns streaming off; the agent then asks for input. The
// interceptor's a2a.task.status (TASK_STATE_INPUT_REQUIRED), a
// capability-dependent transition, makes the carddrift worker revalidate:
// streaming-disabled touches the task, card.drift says abort, and the
// planner library delivers it while the client is still deciding its next
// call — which, told to abort, is CancelTask instead of the answer.
func TestEndToEndStreamingTurnedOffMidTask(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := servicetest.Start(t, servicetest.InMemory("e2e-worker"))
	a := newAgent(t, true)

	var mu sync.Mutex
	var log []string // the client's calls and the planner's verdicts, in order
	aborts := make(chan planner.Verdict, 4)
	sub, err := planner.Subscribe(ctx, r.JS, planner.Options{Durable: "e2e-planner", Actions: []detector.Action{detector.Abort}},
		func(_ context.Context, v planner.Verdict) error {
			mu.Lock()
			log = append(log, fmt.Sprintf("verdict %s %s", v.Action, v.TaskID))
			mu.Unlock()
			aborts <- v
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(); <-sub.Closed() })

	em, err := client.NewEmitter(r.JS, "urn:test:a2a-go-v2-client")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close(context.Background()) })
	cl, resolved := newClient(t, ctx, a, em, a2aemitv2.Options{OnError: func(err error) { t.Errorf("emit: %v", err) }},
		callLog{mu: &mu, log: &log})

	// Mid-task, once carddrift has judged the task's first request against
	// the card as planned, the vendor turns streaming off.
	flipped := make(chan struct{})
	a.SetMidTask(func() {
		if !waitFor(30*time.Second, func() bool { return r.Handled(events.TypeRequest, task.OutcomeUnchanged) >= 1 }) {
			t.Errorf("carddrift did not judge the first request before the vendor's change")
		}
		a.SetCard(cardJSON(a.URL()+"/a2a", false))
		close(flipped)
	})
	pctx := a2aemitv2.WithPlan(ctx, a2aemitv2.Plan{SkillID: "translate", Posture: detector.FailClosed})
	taskID, state := stream(t, pctx, cl, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("translate: hello")))
	if taskID == "" || state != a2a.TaskStateInputRequired {
		t.Fatalf("first stream ended with task %q in %q, want input-required", taskID, state)
	}
	<-flipped

	// The pin is the card the client was built from, as served.
	pin := r.WaitPin(string(taskID))
	if want, _ := detector.Digest(resolved.Raw); pin.Digest != want || pin.Source != events.PinClientCard {
		t.Errorf("pin = %s from %s, want the served card's digest %s from the client's card", pin.Digest, pin.Source, want)
	}

	// The client decides its next call: it waits for the planner's word (an
	// event, not a timer), which arrives before any further call.
	var v planner.Verdict
	select {
	case v = <-aborts:
	case <-time.After(45 * time.Second):
		servicetest.DumpLifecycle(t, r.JS, r.Config)
		t.Fatalf("no abort from the planner; lifecycle %v", clienttest.Kinds(clienttest.Lifecycle(t, r.JS, r.Config.LifecycleStream, string(taskID))))
	}
	if v.TaskID != string(taskID) || v.Action != detector.Abort || v.Posture != detector.FailClosed || v.Pinned.Digest != pin.Digest || v.Live.Digest == pin.Digest {
		t.Errorf("verdict = %s %s/%s pinned %s live %s", v.TaskID, v.Action, v.Posture, v.Pinned.Digest, v.Live.Digest)
	}
	if !slices.ContainsFunc(v.Findings, func(f detector.Finding) bool { return f.Rule == detector.RuleStreamingDisabled && f.Touches }) {
		t.Errorf("findings = %+v, want streaming-disabled touching the task", v.Findings)
	}
	servicetest.Flushed(t, em, 20*time.Second)
	before := clienttest.Lifecycle(t, r.JS, r.Config.LifecycleStream, string(taskID))
	last := before[len(before)-1]
	if st, isStatus := last.Data.(events.Status); !isStatus || st.State != string(a2a.TaskStateInputRequired) ||
		v.Trigger.EventID != last.ID || v.Trigger.Type != events.TypeStatus || v.Trigger.Source != "urn:test:a2a-go-v2-client" {
		t.Errorf("trigger = %+v, want the client's last event, its TASK_STATE_INPUT_REQUIRED status (%s %s)", v.Trigger, last.Type, last.ID)
	}

	// Told to abort, the client cancels instead of answering.
	if task, err := cl.CancelTask(ctx, &a2a.CancelTaskRequest{ID: taskID}); err != nil || task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask = %+v, %v", task, err)
	}
	mu.Lock()
	got := slices.Clone(log)
	mu.Unlock()
	if want := []string{"call SendStreamingMessage", "verdict abort " + string(taskID), "call CancelTask"}; !slices.Equal(got, want) {
		t.Errorf("order of calls and verdicts = %v, want %v", got, want)
	}
	servicetest.Flushed(t, em, 20*time.Second)
	r.Drained(t, 20*time.Second)
	kinds := clienttest.Kinds(clienttest.Lifecycle(t, r.JS, r.Config.LifecycleStream, string(taskID)))
	want := []string{
		"submitted skill=translate stream=true push=false in=[text/plain] posture=fail-closed card=true", "request SendStreamingMessage #1", "status TASK_STATE_SUBMITTED", "status TASK_STATE_WORKING",
		"status TASK_STATE_INPUT_REQUIRED", "request CancelTask #1", "status TASK_STATE_CANCELED",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("lifecycle events = %v, want %v", kinds, want)
	}
}

// The submitted card is the v1.0 card the client was built from, byte for
// byte as served, and carddrift pins it: its digest is the one carddrift's
// fetcher computes of the card the agent serves.
func TestSubmittedCardIsPinned(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := servicetest.Start(t, servicetest.InMemory("e2e-worker"))
	a := newAgent(t, true)
	em, err := client.NewEmitter(r.JS, "urn:test:a2a-go-v2-client")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close(context.Background()) })
	cl, resolved := newClient(t, ctx, a, em, a2aemitv2.Options{OnError: func(err error) { t.Errorf("emit: %v", err) }})
	res, err := cl.SendMessage(a2aemitv2.WithPlan(ctx, a2aemitv2.Plan{SkillID: "translate"}),
		&a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	taskID := res.(*a2a.Task).ID
	pin := r.WaitPin(string(taskID))

	servicetest.Flushed(t, em, 20*time.Second)
	evs := clienttest.Lifecycle(t, r.JS, r.Config.LifecycleStream, string(taskID))
	sub, isSub := evs[0].Data.(events.Submitted)
	if !isSub {
		t.Fatalf("first lifecycle event = %T, want submitted", evs[0].Data)
	}
	// The event carries the card as a JSON value (compacted on the wire).
	var served bytes.Buffer
	if err := json.Compact(&served, a.Served()); err != nil {
		t.Fatal(err)
	}
	if string(sub.Card) != served.String() || sub.CardURL != a.URL()+a2aemitv2.WellKnownPath {
		t.Errorf("submitted card %s from %s, want the served card %s", sub.Card, sub.CardURL, served.String())
	}
	card, err := detector.Parse(sub.Card)
	if err != nil {
		t.Fatalf("the submitted card does not parse: %v", err)
	}
	if card.Shape != "v1.0" || len(card.Interfaces) == 0 || card.Interfaces[0].URL != a.URL()+"/a2a" {
		t.Errorf("submitted card: shape %s interfaces %+v, want the v1.0 card's supportedInterfaces", card.Shape, card.Interfaces)
	}
	obs, err := clienttest.LoopbackFetcher(t).FetchAgent(ctx, a.URL(), "")
	if err != nil {
		t.Fatal(err)
	}
	if pin.Digest != obs.Digest || pin.Source != events.PinClientCard || string(obs.Raw) != string(resolved.Raw) {
		t.Errorf("pin %s from %s, fetcher's digest of the served card %s", pin.Digest, pin.Source, obs.Digest)
	}
	if pin.Requirements.SkillID != "translate" || pin.Requirements.Streaming || !slices.Equal(pin.Requirements.InputModes, []string{"text/plain"}) {
		t.Errorf("pinned requirements = %+v", pin.Requirements)
	}
}

// The write-up's failure sequence with a real v1.0 client: the agent stops
// accepting text, the client's answer fails with -32602, the client retries
// on its stale card. carddrift judges the error (a schema-class error
// forces a fetch: drift, abort) and then the retry (blind-retry).
func TestEndToEndSchemaErrorThenBlindRetry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := servicetest.Start(t, servicetest.InMemory("e2e-worker"))
	a := newAgent(t, true)
	verdicts := r.Verdicts(planner.Options{Durable: "e2e-planner"})
	em, err := client.NewEmitter(r.JS, "urn:test:a2a-go-v2-client")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close(context.Background()) })
	cl, _ := newClient(t, ctx, a, em, a2aemitv2.Options{OnError: func(err error) { t.Errorf("emit: %v", err) }})

	res, err := cl.SendMessage(a2aemitv2.WithPlan(ctx, a2aemitv2.Plan{SkillID: "translate", Posture: detector.FailClosed}),
		&a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("translate: hello"))})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	tk, isTask := res.(*a2a.Task)
	if !isTask || tk.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("SendMessage = %#v, want a task in input-required", res)
	}
	r.WaitPin(string(tk.ID))
	servicetest.Flushed(t, em, 20*time.Second)
	r.Drained(t, 20*time.Second)

	a.SetCard(cardJSONModes(a.URL()+"/a2a", true, `"application/json"`))
	a.SetReject(a2a.NewError(a2a.ErrInvalidParams, "text parts are no longer accepted"))
	answer := &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, tk, a2a.NewTextPart("French"))}
	for range 2 {
		if _, err := cl.SendMessage(ctx, answer); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Fatalf("answer: SendMessage = %v, want invalid params", err)
		}
	}

	natstest.Eventually(t, 30*time.Second, "two card.drift for the task", func() bool { return len(verdicts(string(tk.ID))) >= 2 })
	vs := verdicts(string(tk.ID))
	if v := vs[0]; v.Trigger.Type != events.TypeError || v.Action != detector.Abort || !slices.Contains(detector.RuleIDs(v.Findings), detector.RuleDefaultInputModesChanged) {
		t.Errorf("first verdict: trigger %s action %s rules %v, want the error's abort with default-input-modes-changed", v.Trigger.Type, v.Action, detector.RuleIDs(v.Findings))
	}
	if v := vs[1]; v.Trigger.Type != events.TypeRequest || !slices.Contains(detector.RuleIDs(v.Findings), detector.RuleBlindRetry) {
		t.Errorf("second verdict: trigger %s rules %v, want the retry's blind-retry", v.Trigger.Type, detector.RuleIDs(v.Findings))
	}
	servicetest.Flushed(t, em, 20*time.Second)
	kinds := clienttest.Kinds(clienttest.Lifecycle(t, r.JS, r.Config.LifecycleStream, string(tk.ID)))
	want := []string{
		"submitted skill=translate stream=false push=false in=[text/plain] posture=fail-closed card=true", "request SendMessage #1", "status TASK_STATE_INPUT_REQUIRED",
		"request SendMessage #1", "error SendMessage -32602",
		"request SendMessage #2", "error SendMessage -32602",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("lifecycle events = %v, want %v", kinds, want)
	}
}

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

// An existing a2a-go/v2 (A2A v1.0) client gets carddrift's lifecycle events
// by adding one option. The agent here is an a2a-go/v2 server (a2asrv, its
// JSON-RPC handler and its agent-card handler, package a2aemitv2test) on
// loopback.
func ExampleWithLifecycleEvents() {
	a := a2aemitv2test.NewAgent(true)
	defer a.Close()
	ctx := context.Background()
	rec := &clienttest.Recorder{}

	// Discover the card keeping the bytes as served (through carddrift's
	// fetcher, whose SSRF guard must let this loopback agent in), build the
	// client with the interceptor (recording the events to print them: a
	// real client passes an *client.Emitter), and say what the task is
	// planned for.
	f, err := fetcher.New(fetcher.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		panic(err)
	}
	defer f.Close()
	card, err := a2aemitv2.ResolveCard(ctx, f, a.URL())
	if err != nil {
		panic(err)
	}
	cl, err := a2aclient.NewFromCard(ctx, card.AgentCard,
		a2aemitv2.WithLifecycleEvents(rec, a2aemitv2.Options{RawCard: card.Raw, CardURL: card.URL}))
	if err != nil {
		panic(err)
	}
	defer cl.Destroy()
	ctx = a2aemitv2.WithPlan(ctx, a2aemitv2.Plan{SkillID: "translate", Posture: detector.Degrade, Idempotent: true})

	var id a2a.TaskID
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("translate: hello"))
	for ev, err := range cl.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
		if err != nil {
			panic(err)
		}
		id = ev.TaskInfo().TaskID
	}
	answer := a2a.NewMessageForTask(a2a.MessageRoleUser, a2a.TaskInfo{TaskID: id}, a2a.NewTextPart("French"))
	if _, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: answer}); err != nil {
		panic(err)
	}
	// A blocking SendMessage answers with the finished task: its artifact,
	// then its last state (the working state in between is not seen).
	for _, d := range rec.Events() {
		fmt.Println(clienttest.Kind(d))
	}
	fmt.Println("card as served:", string(card.Raw) == string(a.Served()))
	// Output:
	// submitted skill=translate stream=true push=false in=[text/plain] posture=degrade card=true
	// request SendStreamingMessage #1
	// status TASK_STATE_SUBMITTED
	// status TASK_STATE_WORKING
	// status TASK_STATE_INPUT_REQUIRED
	// request SendMessage #1
	// artifact [text/plain]
	// status TASK_STATE_COMPLETED
	// card as served: true
}
