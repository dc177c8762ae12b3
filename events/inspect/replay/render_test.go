package replay_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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
		Rules:     &detector.RuleSet{Disable: []string{"skill-removed"}, Severity: map[string]detector.Severity{"no-such-rule": detector.Info}},
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

// TestRenderGolden: every rendering of a timeline (as carddrift replay
// streams it, and its page), a card history and a re-evaluation is, byte
// for byte, testdata/render's (the hostile history, and empty ones).
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

// hostileHistory is a timeline and a card history in which an agent's card
// changed its name to rendertest.HostileName (and a skill name and version
// to markup), with an agent URL and a task id that hold markup as well.
func hostileHistory(t *testing.T) (*replay.Timeline, *replay.CardHistory) {
	t.Helper()
	card := func(name, skill, version string) []byte {
		return []byte(`{"name":` + quoteJSON(name) + `,"description":"d","version":` + quoteJSON(version) + `,` +
			`"supportedInterfaces":[{"url":"https://a.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],` +
			`"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],` +
			`"skills":[{"id":"s1","name":` + quoteJSON(skill) + `,"description":"d","tags":["t"]}]}`)
	}
	parse := func(raw []byte) (*detector.Card, string) {
		c, err := detector.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		digest, _ := detector.Digest(raw)
		return c, digest
	}
	pinned, pd := parse(card("Ledger", "Summarise", "1.0"))
	live, ld := parse(card(rendertest.HostileName, "<b>bold</b> & co", `1.1"><script>`))
	findings := detector.Diff(pinned, live)
	if !strings.Contains(findingMessages(findings), rendertest.HostileName) {
		t.Fatalf("no finding quotes the new name: %v", findings)
	}
	findings = append(findings, detector.Finding{Rule: "skill-removed", Severity: detector.Breaking, Path: `/skills/<i>`, Message: `skill "<img src=x>" removed`})
	change := &replay.Change{From: pd, To: ld, Findings: findings}

	agent := `https://a.example/"><script>`
	task := `task-<script>&"'`
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	req := detector.Requirements{SkillID: "s1", Posture: detector.FailClosed, Streaming: true}
	verdict := detector.Verdict{Action: detector.Abort, Posture: detector.FailClosed, Reason: "card name is now " + rendertest.HostileName}
	drift := events.Drift{TaskID: task, AgentURL: agent, CardURL: agent + "/card", Pinned: events.CardRef{Digest: pd}, Live: events.CardRef{Digest: ld},
		Findings: findings, Verdict: verdict, Trigger: events.Trigger{EventID: `<e1>`, Type: "a2a.task.request"}}
	// The same task re-planned onto a renamed skill (verdict.replanSkill),
	// whose new id is hostile too.
	renamed := drift
	renamed.Findings = []detector.Finding{{Rule: detector.RuleSkillRenamed, Severity: detector.Breaking, Path: "/skills/0/id",
		Before: "s1", After: `s1-<v2>`, Skill: "s1", Touches: true, Message: `skill "s1" is now offered as "s1-<v2>"`}}
	renamed.Verdict = detector.Verdict{Action: detector.Replan, Posture: detector.Degrade, ReplanSkill: `s1-<v2>`,
		Reason: `degrade: skill "s1" is now offered as "s1-<v2>"`}
	renamed.Trigger.EventID = `<e2>`
	tl := &replay.Timeline{
		Query: replay.Query{AgentURL: agent},
		Entries: []replay.Entry{
			{Time: at(0), Kind: replay.KindLifecycle, Type: events.TypeSubmitted, TaskID: task, AgentURL: agent, Digests: replay.Digests{Pinned: pd},
				Data: events.Submitted{TaskID: task, AgentURL: agent, SkillID: "s1", Posture: detector.FailClosed}},
			{Time: at(10), Kind: replay.KindPin, Type: events.TypePinned, TaskID: task, AgentURL: agent, Digests: replay.Digests{Pinned: pd},
				Data: events.Pinned{TaskID: task, AgentURL: agent, Digest: pd, Source: "client-card"}},
			{Time: at(20), Kind: replay.KindObservation, Type: events.TypeObserved, AgentURL: agent, Digests: replay.Digests{Live: pd},
				Data: events.Observed{AgentURL: agent, CardURL: agent + "/card", Digest: pd, Status: 200, FetchedAt: at(20)}},
			{Time: at(30), Kind: replay.KindObservation, Type: events.TypeObserved, AgentURL: agent, Digests: replay.Digests{Live: ld}, Change: change,
				Data: events.Observed{AgentURL: agent, CardURL: agent + "/card", Digest: ld, Status: 200, FetchedAt: at(30)}},
			{Time: at(40), Kind: replay.KindUnreachable, Type: events.TypeUnreachable, TaskID: task, AgentURL: agent,
				Data: events.Unreachable{AgentURL: agent, CardURL: agent + "/card", Reason: "timeout", Detail: "<timeout>", TaskID: task}},
			{Time: at(50), Kind: replay.KindVerdict, Type: events.TypeDrift, TaskID: task, AgentURL: agent, Digests: replay.Digests{Pinned: pd, Live: ld}, Data: drift},
			{Time: at(60), Kind: replay.KindVerdict, Type: events.TypeDrift, TaskID: task, AgentURL: agent, Digests: replay.Digests{Pinned: pd, Live: ld}, Data: renamed},
		},
		Stories: []replay.Story{{
			TaskID: task, AgentURL: agent, Requirements: &req, Planned: pd, PinSource: "client-card", PinnedAt: at(10),
			Moment: &replay.Moment{Time: at(50), Type: events.TypeDrift, Action: detector.Abort, What: "abort: " + rendertest.HostileName},
			Live:   ld, LiveAt: at(30), Change: change, Verdicts: replay.VerdictCounts{Abort: 1, Replan: 1}, State: "<working>",
		}},
	}
	h := &replay.CardHistory{AgentURL: agent, Versions: []replay.Version{
		{Digest: pd, CardVersion: "1.0", Recorded: true, FirstSeen: at(0), LastSeen: at(20), Observed: 1, Pinned: 1},
		{Digest: ld, CardVersion: `1.1"><script>`, Recorded: true, FirstSeen: at(30), LastSeen: at(50), Observed: 1, Drift: 1, Change: change},
		{Digest: "sha256:" + strings.Repeat("0", 64), FirstSeen: at(60), LastSeen: at(60), Observed: 1,
			Change: &replay.Change{From: ld, To: "sha256:" + strings.Repeat("0", 64), Missing: []string{"<missing>"}}},
	}}
	return tl, h
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

func findingMessages(fs []detector.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.Message + "\n")
	}
	return b.String()
}

// TestReplayHTMLEscapes renders both pages for an agent whose card is named
// <script>...: the name must come out as text (in table cells and
// tooltips), never as an element, and the pages must stay well-formed XML.
func TestReplayHTMLEscapes(t *testing.T) {
	tl, h := hostileHistory(t)
	for _, page := range []struct {
		name  string
		write func(io.Writer) error
		svg   int
	}{
		{"timeline", func(w io.Writer) error { return tl.WriteHTML(w) }, 1},
		{"cards", func(w io.Writer) error { return h.WriteHTML(w) }, 1},
	} {
		t.Run(page.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := page.write(&b); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), page.name+".html")
			if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			rendertest.CheckPage(t, path, page.svg)
			text, elements := rendertest.PageText(t, b.Bytes())
			if scripts := elements["script"]; scripts != 1 {
				t.Errorf("%d <script> elements, want only the page's own", scripts)
			}
			for _, el := range []string{"img", "i", "e1", "missing", "working", "timeout"} {
				if elements[el] != 0 {
					t.Errorf("a <%s> element came out of the data", el)
				}
			}
			if !strings.Contains(text, rendertest.HostileName) {
				t.Errorf("the page text does not show the card name %q", rendertest.HostileName)
			}
			if page.name == "cards" && !strings.Contains(text, `1.1"><script>`) {
				t.Errorf("the page text does not show the card version")
			}
			if page.name == "timeline" && !strings.Contains(text, `task-<script>&"'`) {
				t.Errorf("the page text does not show the task id")
			}
			if page.name == "timeline" {
				rendertest.RenderHostile(t, path, "replay")
			}
		})
	}
}
