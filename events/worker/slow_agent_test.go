package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// TestSlowAgentHoldsBackNoOtherTask: one agent's card endpoint answers after
// seconds (slow, not dead) while its tasks transition; tasks on healthy
// agents, in the same partitions, behind them in the stream, get their
// verdicts meanwhile — before the slow agent has answered at all. (Handled
// one message at a time per partition, every healthy verdict waited for the
// slow fetch.)
func TestSlowAgentHoldsBackNoOtherTask(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	const slowFor = 2 * time.Second
	answered := make(chan time.Time, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		time.Sleep(slowFor)
		select {
		case answered <- time.Now():
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		fmt.Fprint(w, strings.ReplaceAll(servicetest.WriteupT0, "AGENT", "http://"+req.Host))
	}))
	t.Cleanup(slow.Close)
	healthy := servicetest.NewAgent(t, servicetest.WriteupT0)

	// Every task is pinned on the card its client sent (no fetch at
	// submission).
	const nSlow, nHealthy = 20, 8
	for i := range nSlow {
		card := strings.ReplaceAll(servicetest.WriteupT0, "AGENT", slow.URL)
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprint("slow-", i), AgentURL: slow.URL, SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Card: []byte(card)}))
	}
	for i := range nHealthy {
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprint("ok-", i), AgentURL: healthy.URL(), SkillID: "summarize",
			Requires: events.Requires{Streaming: true}, Card: healthy.Served(servicetest.WriteupT0)}))
	}
	r.Eventually("every pin", func() bool { return r.Handled(events.TypeSubmitted, "pinned") == nSlow+nHealthy })

	// The healthy agent turns streaming off; the slow agent's tasks
	// transition first, the healthy ones right behind them.
	healthy.Set(servicetest.WriteupT40)
	for i := range nSlow {
		must(t, r.Emit.Request(ctx, events.Request{TaskID: fmt.Sprint("slow-", i), AgentURL: slow.URL, Method: "message/stream", Attempt: 1}))
	}
	sent := time.Now()
	for i := range nHealthy {
		must(t, r.Emit.Request(ctx, events.Request{TaskID: fmt.Sprint("ok-", i), AgentURL: healthy.URL(), Method: "message/stream", Attempt: 1}))
	}
	r.Eventually("the healthy tasks' verdicts", func() bool {
		n := 0
		for i := range nHealthy {
			n += len(r.Out().Events(events.TypeDrift, fmt.Sprint("ok-", i)))
		}
		return n == nHealthy
	})
	verdicts := time.Now()
	select {
	case at := <-answered:
		if !verdicts.Before(at) {
			t.Fatalf("the healthy tasks' verdicts came %s after they were sent, after the slow agent answered: they waited for it", verdicts.Sub(sent))
		}
	default:
		// The slow agent has not answered yet: the verdicts did not wait.
	}
	for i := range nHealthy {
		d := r.Out().Events(events.TypeDrift, fmt.Sprint("ok-", i))[0].Data.(events.Drift)
		if d.Verdict.Action != detector.Abort {
			t.Errorf("ok-%d: %s, want abort (streaming-disabled)", i, d.Verdict.Action)
		}
	}
	t.Logf("healthy verdicts %s after their transitions; the slow agent answers after %s", verdicts.Sub(sent), slowFor)
}
