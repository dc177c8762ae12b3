package worker_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
)

// TestShuffledDeliveryGivesSameVerdicts replays the pinning write-up's
// lifecycle for one task in every order a redelivery could produce (all 120
// permutations of its five events, each carrying its stream position) and
// asserts that the verdicts published are the same as in stream order:
// events before the submission wait for it, and a retry handled before the
// -32602 that precedes it in the stream is still judged a blind retry.
func TestShuffledDeliveryGivesSameVerdicts(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{Configure: func(c *store.Config) {
		c.Partitions, c.AckWait = 0, time.Second
	}})
	js, cfg := r.JS, r.Config
	ctx := context.Background()
	agent := servicetest.NewAgent(t, servicetest.WriteupT40) // live since before the events
	pinned := agent.Served(servicetest.WriteupT0)
	w := r.NewWorker("order", func(o *worker.Options) { o.PinnedTTL = 0 })

	lifecycle := func(task string) []events.Event {
		ds := []events.Data{
			events.Submitted{TaskID: task, AgentURL: agent.URL(), SkillID: "summarize", Posture: detector.FailClosed,
				Requires: events.Requires{Streaming: true}, Card: pinned},
			events.Request{TaskID: task, AgentURL: agent.URL(), Method: "tasks/sendSubscribe", Attempt: 1},
			events.Status{TaskID: task, AgentURL: agent.URL(), State: "input-required", SkillID: "translate"},
			events.Error{TaskID: task, AgentURL: agent.URL(), Method: "tasks/send", Code: -32602, Message: "Invalid params"},
			events.Request{TaskID: task, AgentURL: agent.URL(), Method: "tasks/send", Attempt: 2},
		}
		out := make([]events.Event, len(ds))
		for i, d := range ds {
			out[i] = events.Event{ID: fmt.Sprintf("%s-%d", task, i), Source: "urn:test", Type: d.EventType(), Time: time.Unix(int64(100+i), 0), Data: d}
		}
		return out
	}

	// verdicts runs the events in the given delivery order (redelivering
	// those told to wait at the end) and returns the rule sets and actions of
	// the card.drift events published for the task.
	verdicts := func(task string, order []int) []string {
		evs := lifecycle(task)
		queue := slices.Clone(order)
		stored := time.Now()
		for n := 0; len(queue) > 0; n++ {
			if n > 50 {
				t.Fatalf("%s: events keep waiting: %v", task, queue)
			}
			i := queue[0]
			queue = queue[1:]
			wait, err := worker.HandleAt(ctx, w, evs[i], uint64(i+1), stored)
			switch {
			case wait:
				queue = append(queue, i) // NAKed: redelivered later
			case err != nil:
				t.Fatalf("%s: handle event %d: %v", task, i, err)
			}
		}
		filter := "card.drift.*." + events.Token(task)
		stream, err := js.Stream(ctx, cfg.EventsStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			t.Fatal(err)
		}
		total := uint64(0)
		for _, c := range info.State.Subjects {
			total += c
		}
		cons, err := js.OrderedConsumer(ctx, cfg.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for range total {
			m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
			if err != nil {
				t.Fatal(err)
			}
			ev, err := events.Decode(m)
			if err != nil {
				t.Fatal(err)
			}
			d := ev.Data.(events.Drift)
			var rules []string
			for _, f := range d.Findings {
				if !slices.Contains(rules, f.Rule) {
					rules = append(rules, f.Rule)
				}
			}
			sort.Strings(rules)
			got = append(got, string(d.Verdict.Action)+" "+strings.Join(rules, ","))
		}
		sort.Strings(got)
		return got
	}

	want := verdicts("in-order", []int{0, 1, 2, 3, 4})
	if len(want) != 3 {
		t.Fatalf("in stream order: %d card.drift, want 3 (card diff, +unmodeled-skill, +blind-retry): %v", len(want), want)
	}
	for _, needle := range []string{detector.RuleUnmodeledSkill, detector.RuleBlindRetry, detector.RuleStreamingDisabled} {
		if !strings.Contains(strings.Join(want, "|"), needle) {
			t.Fatalf("in stream order, no %s: %v", needle, want)
		}
	}
	n := 0
	for _, perm := range permutations([]int{0, 1, 2, 3, 4}) {
		n++
		task := fmt.Sprintf("perm-%d", n)
		if got := verdicts(task, perm); !slices.Equal(got, want) {
			t.Errorf("delivery order %v: verdicts %v, want %v", perm, got, want)
		}
	}
	if n != 120 {
		t.Fatalf("ran %d permutations, want 120", n)
	}
}

func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{slices.Clone(xs)}
	}
	var out [][]int
	for i := range xs {
		rest := append(slices.Clone(xs[:i]), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]int{xs[i]}, p...))
		}
	}
	return out
}
