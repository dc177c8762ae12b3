package test

import (
	"context"
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
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/store/fetcher"
)

// orderLog is a client-side interceptor, attached before carddrift's, that
// logs each call the client makes into the log the planner's verdicts go to.
type orderLog struct {
	a2aclient.PassthroughInterceptor
	mu  *sync.Mutex
	log *[]string
}

func (l orderLog) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	l.mu.Lock()
	*l.log = append(*l.log, "call "+req.Method)
	l.mu.Unlock()
	return ctx, nil, nil
}

// TestInteropA2AGoV2ClientServe is issue 22's scenario against the real
// binary: an a2a-go/v2 (A2A v1.0) client carrying a2aemitv2's interceptor →
// an a2a-go/v2 server (package a2aemitv2test) → `carddrift serve`. While the
// task works — once serve has judged its first request — the vendor turns
// streaming off; the task asks for input; serve revalidates at that
// transition and publishes card.drift abort (streaming-disabled), which the
// planner library delivers before the client's next call: CancelTask.
func TestInteropA2AGoV2ClientServe(t *testing.T) {
	bin := buildCarddrift(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	r := newRig(t, testConfig())
	out := r.collect()
	startServe(t, bin, r.nc.ConnectedUrl(), "serve-a2av2")
	a := a2aemitv2test.NewAgent(true)
	t.Cleanup(a.Close)

	var mu sync.Mutex
	var log []string
	aborts := make(chan planner.Verdict, 4)
	sub, err := planner.Subscribe(ctx, r.js, planner.Options{Durable: "a2av2-planner", Actions: []detector.Action{detector.Abort}},
		func(_ context.Context, v planner.Verdict) error {
			mu.Lock()
			log = append(log, "verdict "+string(v.Action))
			mu.Unlock()
			aborts <- v
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Stop(); <-sub.Closed() })

	f, err := fetcher.New(fetcher.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	card, err := a2aemitv2.ResolveCard(ctx, f, a.URL())
	if err != nil {
		t.Fatal(err)
	}
	em, err := client.NewEmitter(r.js, "urn:test:a2a-go-v2-client")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close(context.Background()) })
	cl, err := a2aclient.NewFromCard(ctx, card.AgentCard, a2aclient.WithCallInterceptors(orderLog{mu: &mu, log: &log}),
		a2aemitv2.WithLifecycleEvents(em, a2aemitv2.Options{RawCard: card.Raw, CardURL: card.URL,
			OnError: func(err error) { t.Errorf("emit: %v", err) }}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Destroy() })

	// Mid-task: once the submission and its first request are in the stream
	// and serve has acknowledged both (judged against the card as planned),
	// the vendor turns streaming off.
	flipped := make(chan error, 1)
	a.SetMidTask(func() {
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		defer wcancel()
		err := waitStreamMsgs(wctx, r, 2)
		if err == nil {
			err = service.WaitDrained(wctx, r.js, r.cfg.LifecycleStream, r.cfg.ConsumerNames(), 20*time.Millisecond)
		}
		a.SetCard(a2aemitv2test.CardJSON(a.URL()+"/a2a", false))
		flipped <- err
	})
	var taskID a2a.TaskID
	var state a2a.TaskState
	pctx := a2aemitv2.WithPlan(ctx, a2aemitv2.Plan{SkillID: "translate", Posture: detector.FailClosed})
	for ev, err := range cl.SendStreamingMessage(pctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("translate: hello"))}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v", err)
		}
		taskID = ev.TaskInfo().TaskID
		switch ev := ev.(type) {
		case *a2a.Task:
			state = ev.Status.State
		case *a2a.TaskStatusUpdateEvent:
			state = ev.Status.State
		}
	}
	if err := <-flipped; err != nil {
		t.Fatalf("waiting for serve to judge the first request: %v", err)
	}
	if state != a2a.TaskStateInputRequired {
		t.Fatalf("first stream ended in %q, want input-required", state)
	}

	var v planner.Verdict
	select {
	case v = <-aborts:
	case <-ctx.Done():
		r.dumpLifecycle(t)
		t.Fatal("no abort from the planner")
	}
	if v.TaskID != string(taskID) || v.Posture != detector.FailClosed || v.Trigger.Type != events.TypeStatus ||
		!slices.ContainsFunc(v.Findings, func(f detector.Finding) bool { return f.Rule == detector.RuleStreamingDisabled && f.Touches }) {
		t.Errorf("verdict: task %s posture %s trigger %+v findings %v, want this task's abort on streaming-disabled, triggered by its status",
			v.TaskID, v.Posture, v.Trigger, describeFindings(v.Findings))
	}
	pins := countBy(out, events.TypePinned)
	if pins[string(taskID)] != 1 {
		t.Errorf("card.pinned for the task: %d, want 1", pins[string(taskID)])
	}
	if d, _ := detector.Digest(card.Raw); v.Pinned.Digest != d {
		t.Errorf("pinned digest %s, want the served card's %s", v.Pinned.Digest, d)
	}

	if tk, err := cl.CancelTask(ctx, &a2a.CancelTaskRequest{ID: taskID}); err != nil || tk.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask = %+v, %v", tk, err)
	}
	mu.Lock()
	got := slices.Clone(log)
	mu.Unlock()
	if want := []string{"call SendStreamingMessage", "verdict abort", "call CancelTask"}; !slices.Equal(got, want) {
		t.Errorf("order of calls and verdicts = %v, want %v", got, want)
	}
	t.Logf("serve: card.drift %s %s (%s)", v.Action, fmt.Sprint(rulesOf(events.Drift{Findings: v.Findings})), v.Reason)
}

// waitStreamMsgs waits until the lifecycle stream holds at least n events.
func waitStreamMsgs(ctx context.Context, r *rig, n uint64) error {
	s, err := r.js.Stream(ctx, r.cfg.LifecycleStream)
	if err != nil {
		return err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lifecycle stream: %d events, want %d: %w", info.State.Msgs, n, ctx.Err())
		case <-tick.C:
		}
	}
}
