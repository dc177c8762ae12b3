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

// TestStreamIsTheTimeline: Stream emits the entries Timeline holds, in the
// same order with the same changes, and the same stories, for every kind of
// query; and an agent's query reads only that agent's messages.
func TestStreamIsTheTimeline(t *testing.T) {
	r, other, rd := twoAgents(t)
	ctx := context.Background()
	all, err := rd.Timeline(ctx, replay.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var firstVerdict time.Time
	for _, e := range all.Entries {
		if e.Kind == replay.KindVerdict {
			firstVerdict = e.Time
			break
		}
	}
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
			tl, err := rd.Timeline(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			es, ss, sum := streamed(t, rd, q)
			if got, want := jsonOf(t, es), jsonOf(t, tl.Entries); got != want || len(es) == 0 {
				t.Errorf("Stream(%s) entries differ from Timeline's:\n%s\n%s", name, got, want)
			}
			if q.Since.IsZero() { // a window's stories start from its look-back (TestStreamWindowLookBack)
				if got, want := jsonOf(t, ss), jsonOf(t, tl.Stories); got != want {
					t.Errorf("Stream(%s) stories differ from Timeline's:\n%s\n%s", name, got, want)
				}
			}
			// A window's Stream also reads the card events of its look-back,
			// which Timeline does not: those stored before the window's
			// reads start (its Since less the clock skew). How many there
			// are depends on how long the recording took, not on the
			// reader.
			lookBack := 0
			if !q.Since.IsZero() {
				lookBack = storedBefore(t, r, r.Config.EventsStream, q.Since.Add(-replay.DefaultClockSkew))
			}
			if sum.Entries != len(es) || sum.Tasks != len(ss) || sum.Read != tl.Read+lookBack || sum.Read < sum.Entries {
				t.Errorf("summary %+v for %d entries, %d stories, Timeline read %d (+%d in the look-back)", sum, len(es), len(ss), tl.Read, lookBack)
			}
		})
	}
	// Every message an agent's query reads is in its answer: it found its
	// tasks through the agent's card subjects and read only their lifecycle
	// subjects, not the other agent's.
	for _, u := range []string{r.agent.URL(), other.URL()} {
		tl, err := rd.Timeline(ctx, replay.Query{AgentURL: u})
		if err != nil {
			t.Fatal(err)
		}
		if tl.Read != len(tl.Entries) || tl.Read >= all.Read {
			t.Errorf("agent %s read %d messages for %d entries (the whole history %d)", u, tl.Read, len(tl.Entries), all.Read)
		}
	}
}

// storedBefore counts the messages of stream stored before at.
func storedBefore(t *testing.T, r *rig, stream string, at time.Time) int {
	t.Helper()
	ctx := context.Background()
	st, err := r.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("%s message %d: %v", stream, seq, err)
		}
		if m.Time.Before(at) {
			n++
		}
	}
	return n
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
