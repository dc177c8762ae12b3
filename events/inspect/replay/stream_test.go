package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service/servicetest"
)

// twoAgents records the rig's history and one task on a second agent, so an
// agent's query has something to leave unread.
func twoAgents(t *testing.T) (*rig, *servicetest.Agent, *replay.Reader) {
	t.Helper()
	r, rd := recorded(t)
	other := servicetest.NewAgent(t, cardV1)
	ctx := context.Background()
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "elsewhere", AgentURL: other.URL(), SkillID: "summarize",
		Posture: detector.FailClosed, Card: []byte(cardV1)}); err != nil {
		t.Fatal(err)
	}
	if err := r.Emit.Status(ctx, events.Status{TaskID: "elsewhere", AgentURL: other.URL(), State: "completed"}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypePinned, len(tasks)+1)
	return r, other, rd
}

// streamed collects what Stream emits.
func streamed(t *testing.T, rd *replay.Reader, q replay.Query) ([]replay.Entry, []replay.Story, *replay.Summary) {
	t.Helper()
	var es []replay.Entry
	var ss []replay.Story
	sum, err := rd.Stream(context.Background(), q, func(it replay.Item) error {
		if it.Entry != nil {
			es = append(es, *it.Entry)
		} else {
			ss = append(ss, *it.Story)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(ss, func(a, b replay.Story) int { return strings.Compare(a.TaskID, b.TaskID) })
	return es, ss, sum
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStreamIsTheTimeline: each query streams the part of the whole
// history's timeline it selects, with the same changes and stories: an
// agent's and a task's query read by subject, a window's from its start
// (with its look-back), and the whole history streamed (stories as tasks
// end) against read at once; and an agent's query reads only that agent's
// messages.
func TestStreamIsTheTimeline(t *testing.T) {
	r, other, rd := twoAgents(t)
	ctx := context.Background()
	all, err := rd.Timeline(ctx, replay.Query{})
	if err != nil {
		t.Fatal(err)
	}
	stories := map[string]replay.Story{}
	for _, s := range all.Stories {
		stories[s.TaskID] = s
	}
	var firstVerdict time.Time
	for _, e := range all.Entries {
		if e.Kind == replay.KindVerdict {
			firstVerdict = e.Time
			break
		}
	}
	key := func(u string) string { k, _ := events.AgentKey(u); return k }
	// A window closed on both sides, between the first and the last entry:
	// the lifecycle and card events outside it are read, not decoded.
	mid := all.Entries[len(all.Entries)/3].Time
	for name, q := range map[string]replay.Query{
		"all":     {},
		"agent":   {AgentURL: r.agent.URL()},
		"other":   {AgentURL: other.URL()},
		"task":    {TaskID: "fc-once"},
		"window":  {Since: firstVerdict},
		"between": {Since: mid, Until: all.Entries[2*len(all.Entries)/3].Time},
	} {
		t.Run(name, func(t *testing.T) {
			es, ss, sum := streamed(t, rd, q)
			selects := func(e replay.Entry) bool {
				switch {
				case q.TaskID != "":
					return e.TaskID == q.TaskID
				case q.AgentURL != "":
					return key(e.AgentURL) == key(q.AgentURL)
				}
				return !e.Time.Before(q.Since) && (q.Until.IsZero() || !e.Time.After(q.Until))
			}
			want := slices.DeleteFunc(slices.Clone(all.Entries), func(e replay.Entry) bool { return !selects(e) })
			// A task's answer also holds its agent's observations while it ran.
			got := slices.DeleteFunc(slices.Clone(es), func(e replay.Entry) bool { return !selects(e) })
			if g, w := jsonOf(t, got), jsonOf(t, want); g != w || len(es) == 0 {
				t.Errorf("Stream(%s) entries differ from the whole timeline's:\n%s\n%s", name, g, w)
			}
			if q.Since.IsZero() { // a window's stories start from its look-back (TestStreamWindowLookBack)
				for _, s := range ss {
					if g, w := jsonOf(t, s), jsonOf(t, stories[s.TaskID]); g != w {
						t.Errorf("Stream(%s) story differs from the whole timeline's:\n%s\n%s", name, g, w)
					}
				}
			}
			if sum.Entries != len(es) || sum.Tasks != len(ss) || sum.Read < sum.Entries {
				t.Errorf("summary %+v for %d entries, %d stories", sum, len(es), len(ss))
			}
			// Every message an agent's query reads is in its answer: it
			// found its tasks through the agent's card subjects and read
			// only their lifecycle subjects, not the other agent's.
			if q.AgentURL != "" && (sum.Read != sum.Entries || sum.Read >= all.Read) {
				t.Errorf("agent %s read %d messages for %d entries (the whole history %d)", q.AgentURL, sum.Read, sum.Entries, all.Read)
			}
		})
	}
}

// TestStreamWindowLookBack: a window that opens after the tasks were pinned
// still tells each task's story from its pin (the look-back before the
// window), and the first observation in it shows its change from the card
// observed before.
func TestStreamWindowLookBack(t *testing.T) {
	_, rd := recorded(t)
	ctx := context.Background()
	v1 := digest(t, cardV1)
	all, err := rd.Timeline(ctx, replay.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var lastPin time.Time
	for _, e := range all.Entries {
		if e.Kind == replay.KindPin {
			lastPin = e.Time
		}
	}
	q := replay.Query{Since: lastPin.Add(time.Nanosecond)}
	es, ss, _ := streamed(t, rd, q)
	for _, e := range es {
		if e.Kind == replay.KindPin || e.Time.Before(q.Since) {
			t.Errorf("window since %s holds %s at %s", q.Since, e.Type, e.Time)
		}
	}
	if len(ss) != len(tasks) {
		t.Fatalf("window stories = %d, want %d", len(ss), len(tasks))
	}
	for _, s := range ss {
		if s.Planned != v1 || s.PinSource == "" || s.PinnedAt.After(lastPin) {
			t.Errorf("story %s planned %q (%q at %s), want its pin %s from before the window", s.TaskID, s.Planned, s.PinSource, s.PinnedAt, v1)
		}
	}
	tl, err := rd.Timeline(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Entries) != len(es) {
		t.Errorf("Timeline(window) has %d entries, Stream %d", len(tl.Entries), len(es))
	}
}

// TestCappedPage: a capped timeline keeps the first entries and says how
// many it left out, and the page says so with the command that gives them
// all.
func TestCappedPage(t *testing.T) {
	_, rd := recorded(t)
	ctx := context.Background()
	all, err := rd.Timeline(ctx, replay.Query{})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := rd.Capped(ctx, replay.Query{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Entries) != 3 || tl.Omitted != len(all.Entries)-3 || jsonOf(t, tl.Entries) != jsonOf(t, all.Entries[:3]) {
		t.Fatalf("Capped(3) = %d entries, %d omitted; the whole history has %d", len(tl.Entries), tl.Omitted, len(all.Entries))
	}
	for _, s := range tl.Stories {
		if !slices.ContainsFunc(tl.Entries, func(e replay.Entry) bool { return e.TaskID == s.TaskID }) {
			t.Errorf("story of %s, which the capped page does not draw", s.TaskID)
		}
	}
	tl.Rest = "carddrift replay --format json"
	var b bytes.Buffer
	if err := tl.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if want := "draws the first 3 entries of " + jsonOf(t, len(all.Entries)); !strings.Contains(b.String(), want) || !strings.Contains(b.String(), tl.Rest) {
		t.Errorf("page lacks %q and the command", want)
	}
	full, err := rd.Capped(ctx, replay.Query{}, 0)
	if err != nil || full.Omitted != 0 || len(full.Entries) != len(all.Entries) {
		t.Errorf("Capped(default) = %d entries, %d omitted, %v", len(full.Entries), full.Omitted, err)
	}
	b.Reset()
	if err := full.WriteHTML(&b); err != nil || strings.Contains(b.String(), "draws the first") {
		t.Errorf("an uncapped page says it is capped (%v)", err)
	}
}

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
