package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
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

// TestReevaluateUnknownPinnedBody re-evaluates verdicts on tasks pinned by a
// client digest of a card carddrift never saw (card v1; the agent serves
// v2): the worker's decision (detector.EvaluateUnknown) is reproduced,
// another posture or rule set changes it, and the recorded
// pinned-card-unknown finding is not counted twice.
func TestReevaluateUnknownPinnedBody(t *testing.T) {
	r := newRig(t, cardV2)
	ctx := context.Background()
	url := r.agent.URL()
	unseen := digest(t, cardV1)
	type tk struct {
		id         string
		posture    detector.Posture
		idempotent bool
		want       detector.Action
	}
	tks := []tk{
		{"u-fc", detector.FailClosed, true, detector.Abort},
		{"u-deg", detector.Degrade, true, detector.Replan},
		{"u-deg-once", detector.Degrade, false, detector.Abort},
	}
	for _, k := range tks {
		if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: k.id, AgentURL: url, SkillID: "summarize",
			Posture: k.posture, Idempotent: k.idempotent, CardDigest: unseen}); err != nil {
			t.Fatal(err)
		}
		if err := r.Emit.Request(ctx, events.Request{TaskID: k.id, AgentURL: url, Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r.waitCardEvents(events.TypeDrift, len(tks))
	rd := r.reader()

	reevaluate := func(t *testing.T, re replay.Reevaluation) []change {
		t.Helper()
		rep, out := reevaluate(t, rd, re, len(tks))
		for _, d := range rep.Differences {
			var rules []string
			for _, f := range d.Findings {
				rules = append(rules, f.Rule)
			}
			if re.Rules == nil && !slices.Equal(rules, []string{detector.RulePinnedCardUnknown}) {
				t.Errorf("%s: re-evaluated findings %v, want one pinned-card-unknown", d.TaskID, rules)
			}
		}
		return out
	}

	// What the worker published.
	tl, err := rd.Timeline(ctx, replay.Query{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]detector.Action{}
	for _, e := range tl.Entries {
		if d, ok := e.Data.(events.Drift); ok {
			got[d.TaskID] = d.Verdict.Action
		}
	}
	for _, k := range tks {
		if got[k.id] != k.want {
			t.Errorf("%s: published %q, want %s", k.id, got[k.id], k.want)
		}
	}

	disable, err := detector.ParseRuleSet(strings.NewReader(`{"disable":["pinned-card-unknown"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		re   replay.Reevaluation
		want []change
	}{
		{"as recorded", replay.Reevaluation{}, nil},
		{"fail-closed", replay.Reevaluation{Posture: detector.FailClosed}, []change{{"u-deg", detector.Replan, detector.Abort}}},
		{"degrade", replay.Reevaluation{Posture: detector.Degrade}, []change{{"u-fc", detector.Abort, detector.Replan}}},
		{"pinned-card-unknown disabled", replay.Reevaluation{Rules: disable}, []change{
			{"u-deg", detector.Replan, detector.Continue}, {"u-deg-once", detector.Abort, detector.Continue}, {"u-fc", detector.Abort, detector.Continue}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reevaluate(t, tc.re); !slices.Equal(got, tc.want) {
				t.Errorf("Reevaluate = %v, want %v", got, tc.want)
			}
		})
	}
}

// A pin's body that carddrift learns only after the verdict (the agent
// served it later, and its body was stored) does not change what
// re-evaluation reproduces: the worker judged without it (its card.drift's
// pinned has no fingerprint), and so does re-evaluation. Under load, the
// demo's re-evaluation check failed this way: a client-digest pin judged
// pinned-card-unknown, re-judged later with the body by then stored.
func TestReevaluateBodyLearnedLater(t *testing.T) {
	r := newRig(t, cardV2)
	ctx := context.Background()
	url := r.agent.URL()
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "later", AgentURL: url, SkillID: "summarize",
		Posture: detector.Degrade, Idempotent: true, CardDigest: digest(t, cardV1)}); err != nil {
		t.Fatal(err)
	}
	if err := r.Emit.Request(ctx, events.Request{TaskID: "later", AgentURL: url, Method: "message/stream", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypeDrift, 1)
	// The drift is the submission's (a client digest that is not the live
	// card): the request may still be handled, its fetch of v2 in flight,
	// and a pin on first fetch made now would share that fetch (v2).
	r.Drained(t, servicetest.WaitTimeout)

	// The agent serves v1 now; a task pinned on first fetch stores its body.
	r.agent.Set(cardV1)
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "stores-v1", AgentURL: url, SkillID: "summarize"}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypePinned, 2)
	if d := r.Out().Events(events.TypePinned, "stores-v1")[0].Data.(events.Pinned).Digest; d != digest(t, cardV1) {
		t.Fatalf("stores-v1 pinned %s, want v1 (%s): the test's premise", d, digest(t, cardV1))
	}

	// Back on v2, a later transition of the first task is judged with the
	// body the worker now has: a second card.drift, with v1's findings
	// (its pinned still has no fingerprint: the pin was made without it).
	r.agent.Set(cardV2)
	if err := r.Emit.Status(ctx, events.Status{TaskID: "later", AgentURL: url, State: "input-required"}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypeDrift, 2)

	rep, changes := reevaluate(t, r.reader(), replay.Reevaluation{}, 2)
	if len(changes) != 0 {
		t.Fatalf("re-evaluation as recorded changed %v (differences %+v), want none: each verdict re-judged on what the worker had", changes, rep.Differences)
	}
}

// Re-evaluating verdicts about signed cards judges the cards as the worker
// did — with the signers the card.drift recorded, not the signatures of the
// body stored under a digest (signatures never change one) — so it finds
// nothing to change: a tampered card still aborts, a rotation still only
// warns.
func TestReevaluateSignedCards(t *testing.T) {
	keyA, keyB := servicetest.NewSigningKey(t, "a"), servicetest.NewSigningKey(t, "b")
	r := &rig{Rig: servicetest.Start(t, servicetest.Options{Workers: []string{"w"}, Worker: func(o *worker.Options) {
		o.Fetch.Signatures = fetcher.SignatureOptions{Trusted: signature.NewKeySet(keyA.Pub, keyB.Pub), JKU: fetcher.JKUOff}
	}})}
	tampered, rotated := servicetest.NewAgent(t, keyA.Sign(t, cardV1)), servicetest.NewAgent(t, keyA.Sign(t, cardV1))
	ctx := context.Background()
	for task, a := range map[string]*servicetest.Agent{"tampered": tampered, "rotated": rotated} {
		if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: a.URL(), SkillID: "summarize"}); err != nil {
			t.Fatal(err)
		}
	}
	r.waitCardEvents(events.TypePinned, 2)
	tampered.Set(strings.Replace(keyA.Sign(t, cardV1), `"name":"B"`, `"name":"B2"`, 1))
	rotated.Set(keyB.Sign(t, cardV1))
	for task, a := range map[string]*servicetest.Agent{"tampered": tampered, "rotated": rotated} {
		if err := r.Emit.Request(ctx, events.Request{TaskID: task, AgentURL: a.URL(), Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r.waitCardEvents(events.TypeDrift, 2)
	want := map[string]detector.Action{"tampered": detector.Abort, "rotated": detector.Continue}
	for task, action := range want {
		if d := r.Out().Drifts(task)[0]; d.Verdict.Action != action {
			t.Fatalf("%s: published %s (%s), want %s", task, d.Verdict.Action, d.Verdict.Reason, action)
		}
	}
	rep, changes := reevaluate(t, r.reader(), replay.Reevaluation{}, 2)
	if len(changes) != 0 {
		for _, d := range rep.Differences {
			t.Errorf("%s: re-evaluated %s (%s), published %s", d.TaskID, d.New.Action, d.New.Reason, d.Old.Action)
		}
	}
}

// TestTimelineExtendedPin: a task's timeline says which card its pin is
// (card.pinned extended: the extended card, or unavailable: the public card).
func TestTimelineExtendedPin(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	pin := func(task, extended string) replay.Entry {
		return replay.Entry{Time: t0, Kind: replay.KindPin, Type: events.TypePinned, TaskID: task, AgentURL: "https://ledger.example",
			Data: events.Pinned{TaskID: task, AgentURL: "https://ledger.example", Source: events.PinFirstFetch, Extended: extended}}
	}
	tl := &replay.Timeline{Entries: []replay.Entry{pin("ext", events.ExtendedPinned), pin("pub", events.ExtendedUnavailable), pin("plain", "")}}
	var b bytes.Buffer
	if err := streamTimeline(tl, false)(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pinned (first-fetch, the extended card)", "pinned (first-fetch, extended card unavailable: the public card)", "pinned (first-fetch)\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, b.String())
		}
	}
}

// extSecret is the credential every replay rendering is searched for.
const extSecret = "tok-0e51f2c9-replay-extended-secret"

// ledgerAgent is a v1.0 JSON-RPC agent whose public card (1.0.0) offers an
// extended card (2.0.0, with audit-ledger) to "Bearer extSecret" only.
func ledgerAgent(t *testing.T) (url string, public, extended func() []byte) {
	var srv *httptest.Server
	card := func(version string, skills ...string) []byte {
		var s []string
		for _, id := range skills {
			s = append(s, fmt.Sprintf(`{"id":%q,"name":%q,"description":"d","tags":["t"]}`, id, id))
		}
		return fmt.Appendf(nil, `{"name":"Ledger","description":"ledger agent","version":%q,`+
			`"supportedInterfaces":[{"url":"%s/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
			`"capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[%s]}`,
			version, srv.URL, strings.Join(s, ","))
	}
	public = func() []byte { return card("1.0.0", "summarize") }
	extended = func() []byte { return card("2.0.0", "summarize", "audit-ledger") }
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		switch r.URL.Path {
		case "/.well-known/agent-card.json":
			_, _ = w.Write(public())
		case "/a2a":
			if got := r.Header.Get("Authorization"); got != "Bearer "+extSecret {
				http.Error(w, "token "+got+" not accepted", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, extended())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, public, extended
}

// TestReplayHTMLExtendedPin: the replay page of a task pinned on the
// extended card — recorded by a worker with credentials over an embedded
// JetStream — says so in the task's story (planned against the extended
// card), its pinned band and its entries, and carries no secret; the text
// story says it too.
func TestReplayHTMLExtendedPin(t *testing.T) {
	agent, _, extended := ledgerAgent(t)
	creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": "Bearer %s"}}}`, agent, extSecret), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{Rig: servicetest.Start(t, servicetest.Options{Source: "urn:client:replay-test", Workers: []string{"replay-test-worker"},
		Worker: func(o *worker.Options) { o.Fetch.Credentials = creds }})}
	ctx := context.Background()
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "ext", AgentURL: agent, SkillID: "audit-ledger",
		Requires: events.Requires{ExtendedCard: true}}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypePinned, 1)
	extDigest, _ := detector.Digest(extended())
	tl, err := r.reader().Timeline(ctx, replay.Query{TaskID: "ext"})
	if err != nil {
		t.Fatal(err)
	}
	var page, text bytes.Buffer
	if err := tl.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if err := streamTimeline(tl, false)(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first-fetch, the extended card, pinned", "pinned " + extDigest + " (first-fetch, the extended card)"} {
		if !strings.Contains(html.UnescapeString(page.String()), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if want := "(first-fetch, the extended card, pinned"; !strings.Contains(text.String(), want) {
		t.Errorf("text story lacks %q:\n%s", want, text.String())
	}
	for what, out := range map[string]string{"page": page.String(), "text": text.String()} {
		if strings.Contains(out, extSecret) {
			t.Errorf("the secret is in the replay %s", what)
		}
	}
}
