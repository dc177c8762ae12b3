package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// recorded drives one history through a real worker (see rig.record) and
// returns a Reader over it.
func recorded(t *testing.T) (*rig, *replay.Reader) {
	t.Helper()
	r := newRig(t, cardV1)
	r.record()
	return r, r.reader()
}

func kinds(es []replay.Entry) []string {
	var out []string
	for _, e := range es {
		s := string(e.Kind)
		if e.Kind == replay.KindLifecycle {
			s = strings.TrimPrefix(e.Type, "a2a.task.")
		}
		out = append(out, s)
	}
	return out
}

func rules(fs []detector.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

func TestReplay(t *testing.T) {
	r, rd := recorded(t)
	ctx := context.Background()
	v1, v2 := digest(t, cardV1), digest(t, cardV2)

	t.Run("task timeline", func(t *testing.T) {
		tl, err := rd.Timeline(ctx, replay.Query{TaskID: "fc-idem"})
		if err != nil {
			t.Fatal(err)
		}
		// The order of the story (other tasks' fetches add observations, and
		// the client's plain request may precede the pin).
		at := func(match func(replay.Entry) bool) int {
			for i, e := range tl.Entries {
				if match(e) {
					return i
				}
			}
			return -1
		}
		order := []int{
			at(func(e replay.Entry) bool { return e.Type == events.TypeSubmitted }),
			at(func(e replay.Entry) bool { return e.Kind == replay.KindPin }),
			at(func(e replay.Entry) bool { r, ok := e.Data.(events.Request); return ok && r.Method == "message/stream" }),
			at(func(e replay.Entry) bool { return e.Kind == replay.KindObservation }),
			at(func(e replay.Entry) bool { return e.Kind == replay.KindVerdict }),
			at(func(e replay.Entry) bool { return e.Type == events.TypeStatus }),
		}
		if !slices.IsSorted(order) || order[0] != 0 || slices.Contains(order, -1) {
			t.Fatalf("Timeline(fc-idem) = %v: submitted, pin, stream request, observation, verdict, status at %v", kinds(tl.Entries), order)
		}
		if got := strings.Count(strings.Join(kinds(tl.Entries), ","), "verdict"); got != 1 {
			t.Errorf("Timeline(fc-idem) has %d verdicts, want 1", got)
		}
		for i := 1; i < len(tl.Entries); i++ {
			if tl.Entries[i].Time.Before(tl.Entries[i-1].Time) {
				t.Errorf("entry %d (%s) before entry %d", i, tl.Entries[i].Type, i-1)
			}
			if tl.Entries[i].TaskID != "fc-idem" && tl.Entries[i].Kind != replay.KindObservation {
				t.Errorf("entry %d is %s of task %q", i, tl.Entries[i].Type, tl.Entries[i].TaskID)
			}
		}
		sub, pin, obs, verdict := tl.Entries[order[0]], tl.Entries[order[1]], tl.Entries[order[3]], tl.Entries[order[4]]
		if sub.Digests.Pinned != v1 || pin.Digests.Pinned != v1 || obs.Digests.Live != v2 {
			t.Errorf("digests: submitted %q, pin %q, observation %q; want %s, %s, %s", sub.Digests.Pinned, pin.Digests.Pinned, obs.Digests.Live, v1, v1, v2)
		}
		if verdict.Digests != (replay.Digests{Pinned: v1, Live: v2}) {
			t.Errorf("verdict digests = %+v", verdict.Digests)
		}
		d := verdict.Data.(events.Drift)
		if d.Verdict.Action != detector.Abort {
			t.Errorf("verdict action = %s, want abort", d.Verdict.Action)
		}
		if verdict.Change == nil || verdict.Change.From != v1 || verdict.Change.To != v2 || !slices.Contains(rules(verdict.Change.Findings), detector.RuleStreamingDisabled) {
			t.Errorf("verdict change = %+v, want v1 → v2 with streaming-disabled", verdict.Change)
		}
		if obs.Change != nil {
			t.Errorf("first observation has a change: %+v", obs.Change)
		}
		if len(tl.Stories) != 1 {
			t.Fatalf("stories = %d, want 1", len(tl.Stories))
		}
		s := tl.Stories[0]
		if s.Planned != v1 || s.Live != v2 || s.PinSource != events.PinClientCard || s.Moment == nil || s.Moment.Action != detector.Abort {
			t.Errorf("story = %+v", s)
		}
		if s.Change == nil || !slices.Contains(rules(s.Change.Findings), detector.RuleStreamingDisabled) || s.State != "failed" {
			t.Errorf("story change %+v, state %q", s.Change, s.State)
		}
		if s.Requirements == nil || !s.Requirements.Idempotent || s.Requirements.Posture != detector.FailClosed {
			t.Errorf("story requirements = %+v", s.Requirements)
		}
	})

	t.Run("unreachable is not drift", func(t *testing.T) {
		tl, err := rd.Timeline(ctx, replay.Query{TaskID: "no-stream"})
		if err != nil {
			t.Fatal(err)
		}
		got := kinds(tl.Entries)
		if got[len(got)-1] != "unreachable" || strings.Count(strings.Join(got, ","), "verdict") != 1 {
			t.Errorf("Timeline(no-stream) kinds = %v, want one verdict and a final unreachable", got)
		}
	})

	t.Run("agent timeline and window", func(t *testing.T) {
		tl, err := rd.Timeline(ctx, replay.Query{AgentURL: r.agent.URL() + "/some/path"})
		if err != nil {
			t.Fatal(err)
		}
		if got := tl.Tasks(); !slices.Equal(got, []string{"deg-idem", "fc-idem", "fc-once", "no-stream"}) {
			t.Errorf("agent tasks = %v", got)
		}
		var verdicts []replay.Entry
		for _, e := range tl.Entries {
			if e.Kind == replay.KindVerdict {
				verdicts = append(verdicts, e)
			}
		}
		if len(verdicts) != len(tasks) {
			t.Fatalf("agent verdicts = %d, want %d", len(verdicts), len(tasks))
		}
		after := verdicts[len(verdicts)-1].Time.Add(time.Nanosecond)
		w, err := rd.Timeline(ctx, replay.Query{Since: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range w.Entries {
			if e.Time.Before(after) || e.Kind == replay.KindVerdict {
				t.Errorf("window since %s holds %s at %s", after, e.Type, e.Time)
			}
		}
		if len(w.Entries) == 0 {
			t.Error("window after the verdicts is empty; want the failed status and the unreachable")
		}
		none, err := rd.Timeline(ctx, replay.Query{AgentURL: "http://nobody.example"})
		if err != nil || len(none.Entries) != 0 {
			t.Errorf("Timeline(unknown agent) = %d entries, %v", len(none.Entries), err)
		}
	})

	t.Run("card history", func(t *testing.T) {
		h, err := rd.Cards(ctx, r.agent.URL(), replay.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Versions) != 2 || h.Versions[0].Digest != v1 || h.Versions[1].Digest != v2 {
			t.Fatalf("versions = %+v, want v1 then v2", h.Versions)
		}
		a, b := h.Versions[0], h.Versions[1]
		if a.Pinned != len(tasks) || a.Drift != len(tasks) || b.Observed < 1 || b.Drift != len(tasks) || !a.Recorded || !b.Recorded {
			t.Errorf("counts: v1 %+v, v2 %+v", a, b)
		}
		if a.CardVersion != "1.0.0" || b.CardVersion != "1.1.0" || a.Change != nil {
			t.Errorf("card versions %q %q, first change %+v", a.CardVersion, b.CardVersion, a.Change)
		}
		if b.Change == nil || !slices.Equal(rules(b.Change.Findings), []string{detector.RuleStreamingDisabled, detector.RuleCardVersionChanged}) {
			t.Errorf("changelog v1 → v2 = %+v", b.Change)
		}
		if b.FirstSeen.Before(a.FirstSeen) || a.LastSeen.Before(a.FirstSeen) {
			t.Errorf("seen: v1 %s..%s, v2 %s..%s", a.FirstSeen, a.LastSeen, b.FirstSeen, b.LastSeen)
		}
	})

	t.Run("reevaluate", func(t *testing.T) {
		disable, err := detector.ParseRuleSet(strings.NewReader(`{"disable":["streaming-disabled"]}`))
		if err != nil {
			t.Fatal(err)
		}
		soften, err := detector.ParseRuleSet(strings.NewReader(`{"severity":{"streaming-disabled":"warning"}}`))
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			re   replay.Reevaluation
			want []change
		}{
			{"as recorded", replay.Reevaluation{}, nil},
			{"degrade re-plans the idempotent fail-closed task only", replay.Reevaluation{Posture: detector.Degrade},
				[]change{{"fc-idem", detector.Abort, detector.Replan}}},
			{"fail-closed aborts the degrade task only", replay.Reevaluation{Posture: detector.FailClosed},
				[]change{{"deg-idem", detector.Replan, detector.Abort}}},
			{"streaming-disabled disabled", replay.Reevaluation{Rules: disable}, []change{
				{"deg-idem", detector.Replan, detector.Continue}, {"fc-idem", detector.Abort, detector.Continue}, {"fc-once", detector.Abort, detector.Continue}}},
			{"streaming-disabled a warning", replay.Reevaluation{Rules: soften}, []change{
				{"deg-idem", detector.Replan, detector.Continue}, {"fc-idem", detector.Abort, detector.Continue}, {"fc-once", detector.Abort, detector.Continue}}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, got := reevaluate(t, rd, tt.re, len(tasks))
				if !slices.Equal(got, tt.want) {
					t.Errorf("Reevaluate = %v, want %v", got, tt.want)
				}
			})
		}
		t.Run("deterministic", func(t *testing.T) {
			var outs [2][]byte
			for i := range outs {
				rep, err := rd.Reevaluate(ctx, replay.Query{AgentURL: r.agent.URL()}, replay.Reevaluation{Posture: detector.Degrade, Rules: soften})
				if err != nil {
					t.Fatal(err)
				}
				if outs[i], err = json.Marshal(rep); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Errorf("two re-evaluations differ:\n%s\n%s", outs[0], outs[1])
			}
		})
	})

	t.Run("bad queries", func(t *testing.T) {
		if _, err := rd.Timeline(ctx, replay.Query{AgentURL: "ftp://x"}); !errors.Is(err, replay.ErrInvalidQuery) {
			t.Errorf("Timeline(ftp agent) error = %v, want ErrInvalidQuery", err)
		}
		now := time.Now()
		if _, err := rd.Timeline(ctx, replay.Query{Since: now, Until: now.Add(-time.Hour)}); !errors.Is(err, replay.ErrInvalidQuery) {
			t.Errorf("Timeline(until before since) error = %v, want ErrInvalidQuery", err)
		}
		if _, err := rd.Reevaluate(ctx, replay.Query{}, replay.Reevaluation{Posture: "yolo"}); !errors.Is(err, replay.ErrInvalidQuery) {
			t.Errorf("Reevaluate(posture yolo) error = %v, want ErrInvalidQuery", err)
		}
	})
}

func TestParseRules(t *testing.T) {
	tests := []struct {
		name, in string
		rule     string // offending rule id, "" for a malformed file
		ok       bool
	}{
		{"empty object", `{}`, "", true},
		{"disable and severity", `{"disable":["skill-added","skill-added"],"severity":{"interface-changed":"warning"}}`, "", true},
		{"task-level rule", `{"disable":["blind-retry"]}`, "", true},
		{"unknown rule", `{"disable":["no-such-rule"]}`, "no-such-rule", false},
		{"unknown severity rule", `{"severity":{"nope":"info"}}`, "nope", false},
		{"bad severity", `{"severity":{"skill-added":"fatal"}}`, "skill-added", false},
		{"disabled and overridden", `{"disable":["skill-added"],"severity":{"skill-added":"info"}}`, "skill-added", false},
		{"unknown field", `{"enable":["skill-added"]}`, "", false},
		{"not JSON", `disable skill-added`, "", false},
		{"trailing data", `{} {}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := detector.ParseRuleSet(strings.NewReader(tt.in))
			if tt.ok {
				if err != nil {
					t.Fatalf("ParseRules(%s) = %v", tt.in, err)
				}
				return
			}
			var re *detector.RuleSetError
			if !errors.As(err, &re) || !errors.Is(err, detector.ErrInvalidRuleSet) || re.Rule != tt.rule {
				t.Fatalf("ParseRules(%s) = %v, want a *RulesError for %q", tt.in, err, tt.rule)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-03-01T10:00:00Z", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), true},
		{"2026-03-01T11:00:00.5+01:00", time.Date(2026, 3, 1, 10, 0, 0, 5e8, time.UTC), true},
		{"15m", now.Add(-15 * time.Minute), true},
		{"-2h30m", now.Add(-150 * time.Minute), true},
		{"", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"2026-03-01", time.Time{}, false},
	}
	for _, tt := range tests {
		got, err := replay.ParseTime(tt.in, now)
		if (err == nil) != tt.ok || !got.Equal(tt.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
		if !tt.ok && !errors.Is(err, replay.ErrInvalidQuery) {
			t.Errorf("ParseTime(%q) error %v is not ErrInvalidQuery", tt.in, err)
		}
	}
}

// A submission for task "victim" that a publisher filed under another task's
// subject is not victim's history: an agent-wide replay, which reads the
// subjects of the agent's tasks, never meets it, and a replay of the whole
// history lists it among the skipped messages (subject-mismatch), not as
// victim's submission.
func TestReplaySkipsSubjectMismatch(t *testing.T) {
	r := newRig(t, cardV1)
	ctx := context.Background()
	url := r.agent.URL()
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "honest", AgentURL: url, SkillID: "summarize",
		Posture: detector.FailClosed, Card: []byte(cardV1)}); err != nil {
		t.Fatal(err)
	}
	m, err := events.Encode(events.Event{ID: "forged-1", Source: "urn:client:hostile", Data: events.Submitted{
		TaskID: "victim", AgentURL: url, SkillID: "summarize", Posture: detector.FailClosed, Card: []byte(cardV1)}}, events.Binary)
	if err != nil {
		t.Fatal(err)
	}
	m.Subject = "a2a.task.error.decoy"
	if _, err := r.JS.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypePinned, 1)

	tl, err := r.reader().Timeline(ctx, replay.Query{AgentURL: url})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tl.Entries {
		if e.TaskID == "victim" {
			t.Errorf("Timeline(agent) has an entry %+v for victim, from an event on another task's subject", e)
		}
	}
	if len(tl.Skipped) != 0 {
		t.Errorf("Timeline(agent).Skipped = %+v, want none: the agent's subjects do not carry it", tl.Skipped)
	}
	if tl, err = r.reader().Timeline(ctx, replay.Query{}); err != nil {
		t.Fatal(err)
	}
	for _, e := range tl.Entries {
		if e.TaskID == "victim" {
			t.Errorf("Timeline() has an entry %+v for victim, from an event on another task's subject", e)
		}
	}
	var skipped []string
	for _, s := range tl.Skipped {
		skipped = append(skipped, s.Subject+": "+s.Reason)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "a2a.task.error.decoy") {
		t.Errorf("Timeline().Skipped = %q, want the forged event on a2a.task.error.decoy", skipped)
	}
}

// rig is the servicetest rig with one worker and an agent whose card (or
// status) the test swaps.
type rig struct {
	*servicetest.Rig
	agent *servicetest.Agent
}

func newRig(t *testing.T, card string) *rig {
	t.Helper()
	return &rig{
		Rig:   servicetest.Start(t, servicetest.Options{Source: "urn:client:replay-test", Workers: []string{"replay-test-worker"}}),
		agent: servicetest.NewAgent(t, card),
	}
}

func (r *rig) reader() *replay.Reader {
	r.T.Helper()
	rd, err := replay.New(r.JS, replay.Options{Config: r.Config, Cards: r.Stores.Cards, IdleTimeout: 5 * time.Second})
	if err != nil {
		r.T.Fatal(err)
	}
	return rd
}

// waitCardEvents waits until at least n events of type typ are stored.
func (r *rig) waitCardEvents(typ string, n int) {
	r.T.Helper()
	r.Out().WaitFor(r.T, fmt.Sprintf("%d %s events", n, typ), func(c *servicetest.Collector) bool { return len(c.All(typ)) >= n })
}

// Two versions of one card: v2 turns streaming off (and bumps the version).
const (
	cardV1 = `{"name":"B","version":"1.0.0","protocolVersion":"0.3.0","url":"https://b.example.com/a2a","capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":[]}]}`
	cardV2 = `{"name":"B","version":"1.1.0","protocolVersion":"0.3.0","url":"https://b.example.com/a2a","capabilities":{"streaming":false},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"summarize","name":"Summarize","description":"d","tags":[]}]}`
)

func digest(t *testing.T, card string) string {
	t.Helper()
	d, err := detector.Digest([]byte(card))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// rigTask is one task the history drives.
type rigTask struct {
	id         string
	posture    detector.Posture
	idempotent bool
	streaming  bool
	want       detector.Action // the verdict carddrift emits
}

var tasks = []rigTask{
	{id: "fc-idem", posture: detector.FailClosed, idempotent: true, streaming: true, want: detector.Abort},
	{id: "fc-once", posture: detector.FailClosed, streaming: true, want: detector.Abort},
	{id: "deg-idem", posture: detector.Degrade, idempotent: true, streaming: true, want: detector.Replan},
	{id: "no-stream", posture: detector.FailClosed, want: detector.Continue},
}

// record drives a history through the real worker: every task is submitted
// with card v1 and sends a plain request; the agent switches to v2; every
// task then sends a capability-dependent request (a verdict each); fc-idem
// fails; the agent goes down and no-stream resubscribes (unreachable).
func (r *rig) record() {
	r.T.Helper()
	ctx := context.Background()
	url := r.agent.URL()
	must := func(err error) {
		r.T.Helper()
		if err != nil {
			r.T.Fatal(err)
		}
	}
	for _, tk := range tasks {
		must(r.Emit.Submitted(ctx, events.Submitted{
			TaskID: tk.id, AgentURL: url, SkillID: "summarize",
			Requires: events.Requires{Streaming: tk.streaming}, Posture: tk.posture, Idempotent: tk.idempotent,
			Card: []byte(cardV1),
		}))
		must(r.Emit.Request(ctx, events.Request{TaskID: tk.id, AgentURL: url, Method: "message/send", Attempt: 1}))
	}
	r.waitCardEvents(events.TypePinned, len(tasks))
	r.agent.Set(cardV2)
	for _, tk := range tasks {
		must(r.Emit.Request(ctx, events.Request{TaskID: tk.id, AgentURL: url, Method: "message/stream", Attempt: 1}))
	}
	r.waitCardEvents(events.TypeDrift, len(tasks))
	must(r.Emit.Status(ctx, events.Status{TaskID: "fc-idem", AgentURL: url, State: "failed"}))
	r.agent.SetStatus(503)
	must(r.Emit.Request(ctx, events.Request{TaskID: "no-stream", AgentURL: url, Method: "tasks/resubscribe", Attempt: 1}))
	r.waitCardEvents(events.TypeUnreachable, 1)
}

// change is a task whose verdict a re-evaluation changes.
type change struct {
	task     string
	old, new detector.Action
}

// reevaluate re-evaluates the whole history under re, requires all n tasks
// evaluated and none skipped, and returns the report and its changes by
// task.
func reevaluate(t *testing.T, rd *replay.Reader, re replay.Reevaluation, n int) (*replay.Report, []change) {
	t.Helper()
	rep, err := rd.Reevaluate(context.Background(), replay.Query{}, re)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Evaluated != n || len(rep.Skipped) != 0 {
		t.Fatalf("evaluated %d, skipped %+v; want %d, none", rep.Evaluated, rep.Skipped, n)
	}
	var out []change
	for _, d := range rep.Differences {
		out = append(out, change{d.TaskID, d.Old.Action, d.New.Action})
	}
	slices.SortFunc(out, func(a, b change) int { return strings.Compare(a.task, b.task) })
	return rep, out
}
