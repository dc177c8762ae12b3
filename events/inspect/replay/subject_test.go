package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
)

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
