package replay_test

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/render/rendertest"
	"github.com/carddrift/carddrift/events/inspect/replay"
)

// reevaluated is a re-evaluation under a posture and a rules file (one of
// whose severities names a rule the detector does not have, which the
// description leaves out), with a verdict not re-evaluated and one that
// would differ.
func reevaluated() *replay.Report {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return &replay.Report{Query: replay.Query{AgentURL: "https://a.example", Since: t0}, Posture: detector.Degrade,
		Rules:     &replay.Rules{Disable: []string{"skill-removed"}, Severity: map[string]detector.Severity{"no-such-rule": detector.Info}},
		Evaluated: 4, Skipped: []replay.SkippedVerdict{{Time: t0, TaskID: "t1", EventID: "e1", Reason: "no body"}},
		Differences: []replay.Difference{{Time: t0, TaskID: "task-long-1", Trigger: events.Trigger{EventID: "e2", Type: "a2a.task.request"},
			Old: detector.Verdict{Action: detector.Abort}, New: detector.Verdict{Action: detector.Continue, Reason: "fine"}},
			{Time: t0.Add(time.Second), TaskID: "task-long-2", Trigger: events.Trigger{EventID: "e3", Type: "a2a.task.request"},
				Old: detector.Verdict{Action: detector.Abort},
				New: detector.Verdict{Action: detector.Replan, ReplanSkill: "summarize-v2", Reason: "degrade: skill renamed"}}}}
}

// streamTimeline writes a timeline as carddrift replay streams it: its
// entries, then its stories and the summary, as text or JSON lines.
func streamTimeline(tl *replay.Timeline, asJSON bool) func(io.Writer) error {
	return func(w io.Writer) error {
		sw := replay.NewStreamWriter(w, tl.Query, asJSON)
		for i := range tl.Entries {
			if err := sw.Write(replay.Item{Entry: &tl.Entries[i]}); err != nil {
				return err
			}
		}
		for i := range tl.Stories {
			if err := sw.Write(replay.Item{Story: &tl.Stories[i]}); err != nil {
				return err
			}
		}
		return sw.Close(&replay.Summary{Query: tl.Query, Entries: len(tl.Entries), Tasks: len(tl.Stories), Agents: len(tl.Agents()), Read: tl.Read})
	}
}

// TestRenderGolden: every rendering of a timeline, a card history and a
// re-evaluation is, byte for byte, what carddrift replay printed before the
// renderers moved out of the command (testdata/render; the hostile history
// of render_html_test.go, and empty ones).
func TestRenderGolden(t *testing.T) {
	tl, h := hostileHistory(t)
	rep := reevaluated()
	empty, emptyCards, emptyReport := &replay.Timeline{}, &replay.CardHistory{AgentURL: "x"}, &replay.Report{}
	for _, c := range []struct {
		file  string
		write func(io.Writer) error
	}{
		{"timeline.txt", streamTimeline(tl, false)},
		{"timeline.jsonl", streamTimeline(tl, true)},
		{"timeline-empty.txt", streamTimeline(empty, false)},
		{"cards.txt", h.WriteText},
		{"cards.jsonl", h.WriteJSON},
		{"cards-empty.txt", emptyCards.WriteText},
		{"reevaluate.txt", rep.WriteText},
		{"reevaluate.jsonl", rep.WriteJSON},
		{"reevaluate-empty.txt", emptyReport.WriteText},
	} {
		t.Run(c.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.write(&b); err != nil {
				t.Fatal(err)
			}
			rendertest.Golden(t, filepath.Join("testdata", "render", c.file), b.Bytes())
		})
	}
	for file, write := range map[string]func(io.Writer) error{"timeline.html": tl.WriteHTML, "cards.html": h.WriteHTML} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		rendertest.GoldenPage(t, filepath.Join("testdata", "render", file), b.Bytes()) // the page's own part
	}
}

// TestRenderWriteError: a renderer returns the writer's error.
func TestRenderWriteError(t *testing.T) {
	tl, h := hostileHistory(t)
	rep := reevaluated()
	for name, write := range map[string]func(io.Writer) error{
		"StreamWriter text": streamTimeline(tl, false), "StreamWriter JSON": streamTimeline(tl, true), "Timeline.WriteHTML": tl.WriteHTML,
		"CardHistory.WriteText": h.WriteText, "CardHistory.WriteJSON": h.WriteJSON, "CardHistory.WriteHTML": h.WriteHTML,
		"Report.WriteText": rep.WriteText, "Report.WriteJSON": rep.WriteJSON,
	} {
		if err := write(rendertest.FailingWriter{}); !errors.Is(err, rendertest.ErrWrite) {
			t.Errorf("%s(a failing writer) = %v, want %v", name, err, rendertest.ErrWrite)
		}
	}
}
