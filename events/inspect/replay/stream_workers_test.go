package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// history publishes events as a client and a worker would have, with the
// event times the test chooses, in the order given (the stored order).
type history struct {
	t     *testing.T
	rig   *servicetest.Rig
	agent string
	t0    time.Time
}

// at publishes one event whose data is d at t0+sec, with id.
func (h *history) at(sec float64, id string, d events.Data) {
	h.t.Helper()
	source := "urn:client:replay-test"
	if _, ok := d.(events.Pinned); ok {
		source = "carddrift/replay-test-worker"
	} else if _, ok := d.(events.Drift); ok {
		source = "carddrift/replay-test-worker"
	}
	msg, err := events.Encode(events.Event{ID: id, Source: source, Time: h.t0.Add(time.Duration(sec * float64(time.Second))), Data: d}, events.Binary)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.rig.JS.PublishMsg(context.Background(), msg); err != nil {
		h.t.Fatal(err)
	}
}

func (h *history) submitted(sec float64, task string) {
	h.at(sec, task+"/submitted", events.Submitted{TaskID: task, AgentURL: h.agent, SkillID: "summarize", Posture: detector.FailClosed,
		Requires: events.Requires{Streaming: true}, CardDigest: digest(h.t, cardV1)})
}

func (h *history) request(sec float64, task string) {
	h.at(sec, task+"/request", events.Request{TaskID: task, AgentURL: h.agent, Method: "message/stream", Attempt: 1})
}

func (h *history) status(sec float64, task, state string) {
	h.at(sec, task+"/"+state, events.Status{TaskID: task, AgentURL: h.agent, State: state})
}

// pinned is the worker's pin of task, answering its submission.
func (h *history) pinned(sec float64, task string) {
	h.at(sec, task+"/pinned", events.Pinned{TaskID: task, AgentURL: h.agent, Digest: digest(h.t, cardV1), Source: events.PinClientDigest,
		Trigger: events.Trigger{EventID: task + "/submitted", Type: events.TypeSubmitted, Source: "urn:client:replay-test"}})
}

// aborted is the worker's verdict on task's streaming request: v1 → v2
// turned streaming off.
func (h *history) aborted(sec float64, task string) {
	h.at(sec, task+"/drift", events.Drift{TaskID: task, AgentURL: h.agent, CardURL: h.agent + "/.well-known/agent-card.json",
		Pinned:   events.CardRef{Digest: digest(h.t, cardV1)},
		Live:     events.CardRef{Digest: digest(h.t, cardV2), FetchedAt: h.t0.Add(time.Duration(sec * float64(time.Second)))},
		Findings: []detector.Finding{},
		Verdict:  detector.Verdict{Action: detector.Abort, Posture: detector.FailClosed, Reason: "streaming disabled"},
		Trigger:  events.Trigger{EventID: task + "/request", Type: events.TypeRequest, Source: "urn:client:replay-test"}})
}

// filler keeps the streams going: a task per second from..to, submitted,
// pinned and completed within the second.
func (h *history) filler(from, to int) {
	for s := from; s < to; s++ {
		task := fmt.Sprintf("filler-%03d", s)
		h.submitted(float64(s), task)
		h.pinned(float64(s)+0.1, task)
		h.status(float64(s)+0.2, task, "completed")
	}
}

// TestStreamWaitsForTheWorkers: a task whose worker answers long after the
// task ended (in event time, far more than any fixed wait) gets one story,
// with the verdict in it, as a whole timeline tells it: Stream writes a
// task's story once the workers are seen past its last lifecycle event,
// not after a time. A task whose worker answers after that (slower than
// the workers are past it by settle) still gets one story; its late entry
// is in the answer and counted in Summary.Late.
func TestStreamWaitsForTheWorkers(t *testing.T) {
	r := servicetest.Start(t, servicetest.Options{}) // no worker: the test writes the workers' events
	agent := servicetest.NewAgent(t, cardV1)
	h := &history{t: t, rig: r, agent: agent.URL(), t0: time.Now().UTC().Add(-time.Hour).Truncate(time.Second)}

	// "lagging" ends at 1 s; its worker is busy and answers its submission
	// at 50 s and its streaming request at 90 s, while the other tasks'
	// lifecycle goes on (no card event passes "lagging" before 50 s).
	h.submitted(0, "lagging")
	h.request(0.5, "lagging")
	h.status(1, "lagging", "completed")
	for s := 2; s < 50; s++ {
		h.status(float64(s), "busy", "working")
	}
	h.pinned(50, "lagging")
	h.aborted(90, "lagging")
	// "late" ends at 100 s; the workers are past it at 101 s (a later
	// task's pin), but its verdict comes at 200 s.
	h.submitted(100, "late")
	h.request(100.1, "late")
	h.pinned(100.2, "late")
	h.status(100.5, "late", "completed")
	h.filler(101, 199)
	h.aborted(200, "late")
	h.filler(201, 230)

	rd, err := replay.New(r.JS, replay.Options{Config: r.Config, Cards: r.Stores.Cards, IdleTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := rd.Timeline(context.Background(), replay.Query{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]replay.Story{}
	for _, s := range tl.Stories {
		want[s.TaskID] = s
	}
	count := map[string]int{}
	var got []replay.Story
	sum, err := rd.Stream(context.Background(), replay.Query{}, func(it replay.Item) error {
		if it.Story != nil {
			count[it.Story.TaskID]++
			got = append(got, *it.Story)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range count {
		if n != 1 {
			t.Errorf("task %s has %d stories, want 1", id, n)
		}
	}
	if len(count) != len(want) || sum.Tasks != len(want) {
		t.Errorf("Stream told %d tasks' stories (summary %d), the timeline %d", len(count), sum.Tasks, len(want))
	}
	for _, s := range got {
		if s.TaskID == "late" {
			continue
		}
		if g, w := jsonOf(t, s), jsonOf(t, want[s.TaskID]); g != w {
			t.Errorf("story of %s:\n got  %s\n want %s", s.TaskID, g, w)
		}
	}
	if s := want["lagging"]; s.Verdicts.Abort != 1 || s.Moment == nil || s.Moment.Action != detector.Abort {
		t.Errorf("timeline story of lagging = %s, want its abort", jsonOf(t, s))
	}
	for _, s := range got {
		if s.TaskID == "late" && (s.Verdicts.Abort != 0 || s.State != "completed") {
			t.Errorf("streamed story of late = %s, want it as it stood when the workers were past it", jsonOf(t, s))
		}
	}
	if sum.Late != 1 || sum.Entries != len(tl.Entries) {
		t.Errorf("summary late %d, entries %d; want 1 late of %d", sum.Late, sum.Entries, len(tl.Entries))
	}
}
