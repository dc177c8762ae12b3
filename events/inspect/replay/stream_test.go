package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
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
