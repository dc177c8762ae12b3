package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/fleet"
	"github.com/carddrift/carddrift/events/inspect/render/rendertest"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

// demoSchedule returns the scenario of every agent id of a demo fleet of
// 40 agents under seed, as the demo assigns them (fleet.Schedule is
// deterministic in the seed and the agents' templates; their ports do not
// matter), and each agent's verdict table.
func demoSchedule(t *testing.T, seed int64, duration time.Duration) map[string]fleet.Assignment {
	t.Helper()
	fl, err := fleet.New(fleet.Options{Agents: 40, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if err := fl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	sched, err := fleet.Schedule(seed, fl.Agents(), nil, duration, 0.75)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]fleet.Assignment{}
	for _, as := range sched {
		out[as.AgentID] = as
	}
	return out
}

// agentOfTask returns the agent id and profile of a demo task id
// ("agent-27-plain-0003" → "agent-27", "plain").
func agentOfTask(task string) (string, string) {
	parts := strings.Split(task, "-")
	if len(parts) < 4 {
		return "", ""
	}
	return parts[0] + "-" + parts[1], strings.Join(parts[2:len(parts)-1], "-")
}

// replayLine is one line of `replay --format json`.
type replayLine struct {
	Time     time.Time       `json:"time"`
	Kind     string          `json:"kind"`
	Type     string          `json:"type"`
	TaskID   *string         `json:"taskId"`
	AgentURL *string         `json:"agentUrl"`
	Data     json.RawMessage `json:"data"`
	ID       string          `json:"id"`
	Stream   string          `json:"stream"`
	Stored   time.Time       `json:"stored"`
	Digests  struct {
		Pinned string `json:"pinned"`
		Live   string `json:"live"`
	} `json:"digests"`
	Change *struct {
		From     string `json:"from"`
		To       string `json:"to"`
		Findings []struct {
			Rule string `json:"rule"`
		} `json:"findings"`
		Missing []string `json:"missing"`
	} `json:"change"`
}

// driftData is the part of a card.drift's data the tests read.
type driftData struct {
	TaskID   string `json:"taskId"`
	Findings []struct {
		Rule  string `json:"rule"`
		Skill string `json:"skill"`
	} `json:"findings"`
	Verdict struct {
		Action string `json:"action"`
	} `json:"verdict"`
	Trigger struct {
		EventID string `json:"eventId"`
	} `json:"trigger"`
}

type submittedData struct {
	SkillID    string `json:"skillId"`
	Posture    string `json:"posture"`
	Idempotent bool   `json:"idempotent"`
}

func parseReplayJSON(t *testing.T, out string) []replayLine {
	t.Helper()
	var lines []replayLine
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var rl replayLine
		if err := json.Unmarshal([]byte(l), &rl); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, l)
		}
		if rl.Time.IsZero() || rl.Kind == "" || rl.Type == "" || rl.TaskID == nil || rl.AgentURL == nil || len(rl.Data) == 0 {
			t.Fatalf("line %d lacks time, kind, type, taskId, agentUrl or data: %s", i+1, l)
		}
		lines = append(lines, rl)
	}
	return lines
}

// treeHash hashes every name, mode, size, modification time and content
// under dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(h, "%s %v %d %d\n", rel, info.Mode(), info.Size(), info.ModTime().UnixNano())
		if d.Type().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// replayCLI runs `carddrift replay` on the store and fails on a non-zero
// exit.
func replayCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, "", append([]string{"replay", "--data-dir", dir}, args...)...)
	if code != exitOK {
		t.Fatalf("carddrift replay %v = %d\nstderr: %s", args, code, stderr)
	}
	return stdout
}

// TestReplayDemo records a real demo run (fleet, workers, scenarios) in a
// file store and replays it offline: each injected scenario's task, the
// re-evaluation of every recorded verdict, card history, determinism, the
// HTML page, and that the store directory is never changed.
func TestReplayDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, code, stdout, stderr := recordDemo(t, "--seed", "3")
	var card fleet.Scorecard
	if err := json.Unmarshal([]byte(stdout), &card); err != nil || (code != exitOK && code != exitFindings) {
		t.Fatalf("demo exit %d, scorecard %v\n%s\n%s", code, err, stdout, stderr)
	}
	schedule := demoSchedule(t, 3, 12*time.Second)
	before := treeHash(t, dir)

	// Every line of the whole history, once.
	all := parseReplayJSON(t, replayCLI(t, dir, "--format", "json"))
	submitted := map[string]submittedData{}
	for _, l := range all {
		if l.Type == "a2a.task.submitted" {
			var s submittedData
			if err := json.Unmarshal(l.Data, &s); err != nil {
				t.Fatal(err)
			}
			submitted[*l.TaskID] = s
		}
	}

	t.Run("scenario timelines", func(t *testing.T) {
		// The first task of each scenario that met a verdict (for agent-down,
		// an unreachable fetch) judging a pinned card carddrift had seen. A
		// verdict on a client digest carddrift never saw (pinned-card-unknown,
		// no pinned fingerprint: the contract's verdict whatever the table
		// says, fleet's scorecard counts it so too) has no findings between
		// two cards to check against the table; on a busy machine it can be a
		// scenario's first, as the client's digest names a card that was
		// gone before carddrift first looked.
		first := map[string]string{}
		met := map[string]bool{}
		unknown := map[string]bool{} // tasks with such a verdict
		for _, l := range all {
			agent, _ := agentOfTask(*l.TaskID)
			sc := schedule[agent].Scenario
			if sc == "" || first[sc] != "" {
				continue
			}
			if l.Kind == "verdict" || (sc == fleet.AgentDown && l.Kind == "unreachable") {
				met[sc] = true
				if l.Kind == "verdict" && unknownPin(t, l) {
					unknown[*l.TaskID] = true
				}
				if unknown[*l.TaskID] {
					continue
				}
				first[sc] = *l.TaskID
			}
		}
		for _, sc := range fleet.ScenarioNames() {
			if s := card.Scenarios[sc]; s != nil && s.Exercised && !met[sc] {
				t.Errorf("scenario %s was exercised but no task of it met a verdict", sc)
			}
			if met[sc] && first[sc] == "" {
				t.Logf("scenario %s: every verdict judged a client digest carddrift never saw", sc)
			}
		}
		var scenarios []string
		for sc := range first {
			scenarios = append(scenarios, sc)
		}
		sort.Strings(scenarios)
		if len(met) < 8 {
			t.Fatalf("only %d scenarios met a verdict: %v", len(met), scenarios)
		}
		for _, sc := range scenarios {
			task := first[sc]
			t.Run(sc, func(t *testing.T) {
				lines := parseReplayJSON(t, replayCLI(t, dir, "--task", task, "--format", "json"))
				verdictAt, pinAt := -1, -1
				var d driftData
				for i, l := range lines {
					if *l.TaskID != "" && *l.TaskID != task {
						t.Fatalf("line %d is about task %q", i, *l.TaskID)
					}
					if l.Kind == "verdict" && verdictAt < 0 {
						verdictAt = i
						if err := json.Unmarshal(l.Data, &d); err != nil {
							t.Fatal(err)
						}
					}
				}
				for i, l := range lines {
					if *l.TaskID == task {
						if l.Type != "a2a.task.submitted" {
							t.Errorf("the task's first entry is %s, want a2a.task.submitted", l.Type)
						}
						if verdictAt >= 0 && i > verdictAt {
							t.Errorf("submitted after the verdict")
						}
						break
					}
				}
				for i := 1; i < len(lines); i++ {
					if lines[i].Time.Before(lines[i-1].Time) {
						t.Errorf("line %d (%s) is before line %d", i, lines[i].Type, i-1)
					}
				}
				if sc == fleet.AgentDown {
					// Unreachable is not drift.
					if verdictAt >= 0 || !slices.ContainsFunc(lines, func(l replayLine) bool { return l.Kind == "unreachable" }) {
						t.Errorf("agent-down task %s: verdict at %d, want unreachable entries and no verdict", task, verdictAt)
					}
					return
				}
				if verdictAt < 0 {
					t.Fatalf("no verdict in the timeline of %s", task)
				}
				vl := lines[verdictAt]
				// The verdict table of the task's profile, when it has one row.
				agent, profile := agentOfTask(task)
				var rows []fleet.Expectation
				for _, e := range schedule[agent].Expectations {
					if e.Profile == profile {
						rows = append(rows, e)
					}
				}
				if len(rows) == 1 {
					if d.Verdict.Action != string(rows[0].Outcome) {
						t.Errorf("verdict = %s, the scenario's table says %s", d.Verdict.Action, rows[0].Outcome)
					}
					for _, r := range rows[0].Rules {
						if !slices.ContainsFunc(d.Findings, func(f struct {
							Rule  string `json:"rule"`
							Skill string `json:"skill"`
						}) bool {
							return f.Rule == r
						}) {
							t.Errorf("verdict %s → %s lacks rule %s of the scenario's table (findings %s)", vl.Digests.Pinned, vl.Digests.Live, r, findingRules(d.Findings))
						}
					}
				}
				// The pin it judged and the live card it met, both before it.
				liveSeen := false
				for i, l := range lines[:verdictAt] {
					if l.Kind == "pin" {
						pinAt = i
					}
					if l.Kind == "observation" && l.Digests.Live == vl.Digests.Live {
						liveSeen = true
					}
				}
				if pinAt < 0 || lines[pinAt].Digests.Pinned != vl.Digests.Pinned {
					t.Errorf("no pin of %s before the verdict (pin at %d)", vl.Digests.Pinned, pinAt)
				}
				if !liveSeen {
					t.Errorf("the live card %s of the verdict was not observed before it", vl.Digests.Live)
				}
				if vl.Digests.Pinned != vl.Digests.Live {
					if vl.Change == nil || vl.Change.From != vl.Digests.Pinned || vl.Change.To != vl.Digests.Live {
						t.Errorf("verdict change = %+v, want %s → %s", vl.Change, vl.Digests.Pinned, vl.Digests.Live)
					} else if len(vl.Change.Missing) == 0 && len(vl.Change.Findings) == 0 {
						t.Errorf("verdict change between two recorded cards has no findings")
					}
				}
				// The text answers the operator's question in one place.
				if d.Verdict.Action == "abort" {
					text := replayCLI(t, dir, "--task", task)
					want := []string{"planned against   " + vl.Digests.Pinned, "live when failed  " + vl.Digests.Live}
					if vl.Digests.Pinned != vl.Digests.Live {
						want = append(want, "what changed")
					}
					for _, w := range want {
						if !strings.Contains(text, w) {
							t.Errorf("text lacks %q:\n%s", w, text)
						}
					}
				}
			})
		}
	})

	var firstVerdict replayLine // of the whole history
	for _, l := range all {
		if l.Kind == "verdict" {
			firstVerdict = l
			break
		}
	}

	t.Run("live deployment", func(t *testing.T) {
		// The same history served by a running server: --nats-url gives what
		// --data-dir gives.
		cp := t.TempDir()
		if err := copyTree(dir, cp, offlineCopy{}); err != nil {
			t.Fatal(err)
		}
		emb, err := service.StartEmbedded(cp, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { emb.Shutdown(); emb.WaitForShutdown() }()
		task := *firstVerdict.TaskID
		code, live, stderr := runCLI(t, "", "replay", "--nats-url", emb.ClientURL(), "--task", task, "--format", "json")
		if code != exitOK {
			t.Fatalf("replay --nats-url = %d: %s", code, stderr)
		}
		if offline := replayCLI(t, dir, "--task", task, "--format", "json"); live != offline || live == "" {
			t.Errorf("replay --nats-url and --data-dir differ:\n%s\n%s", live, offline)
		}
	})

	t.Run("reevaluate", func(t *testing.T) {
		type key struct{ task, event string }
		recorded := map[string][]key{} // action → verdicts
		wantReplan := map[key]bool{}
		for _, l := range all {
			if l.Kind != "verdict" {
				continue
			}
			var d driftData
			if err := json.Unmarshal(l.Data, &d); err != nil {
				t.Fatal(err)
			}
			k := key{d.TaskID, d.Trigger.EventID}
			recorded[d.Verdict.Action] = append(recorded[d.Verdict.Action], k)
			s := submitted[d.TaskID]
			removed := slices.ContainsFunc(d.Findings, func(f struct {
				Rule  string `json:"rule"`
				Skill string `json:"skill"`
			}) bool {
				return f.Rule == "skill-removed" && f.Skill == s.SkillID
			})
			if d.Verdict.Action == "abort" && s.Idempotent && s.Posture == "fail-closed" && !removed {
				wantReplan[k] = true
			}
		}
		if len(recorded["abort"]) == 0 || len(recorded["replan"]) == 0 {
			t.Fatalf("the recorded history lacks aborts or re-plans: %v", recorded)
		}
		// Under the tasks' own postures and the default rules, the
		// re-evaluation goes through the worker's decision code and must
		// reproduce every recorded verdict exactly.
		if same := strings.TrimSpace(replayCLI(t, dir, "--reevaluate", "--format", "json")); same != "" {
			t.Errorf("re-evaluation under the same posture and rules differs from the worker's verdicts:\n%s", same)
		}
		diffs := func(posture string) map[key][2]string {
			out := replayCLI(t, dir, "--reevaluate", "--posture", posture, "--format", "json")
			got := map[key][2]string{}
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if l == "" {
					continue
				}
				var d struct {
					TaskID     string `json:"taskId"`
					Idempotent bool   `json:"idempotent"`
					Trigger    struct {
						EventID string `json:"eventId"`
					} `json:"trigger"`
					Old struct{ Action string } `json:"old"`
					New struct{ Action string } `json:"new"`
				}
				if err := json.Unmarshal([]byte(l), &d); err != nil {
					t.Fatalf("not JSON: %v: %s", err, l)
				}
				if posture == "degrade" && !d.Idempotent {
					t.Errorf("degrade changed the verdict of non-idempotent task %s", d.TaskID)
				}
				got[key{d.TaskID, d.Trigger.EventID}] = [2]string{d.Old.Action, d.New.Action}
			}
			return got
		}
		// degrade: exactly the aborts of idempotent fail-closed tasks whose
		// skill is still offered become re-plans; nothing else changes. (The
		// demo's idempotent tasks already run under degrade, so this history
		// may hold none; events/inspect/replay's tests drive one that does.)
		got := diffs("degrade")
		for k, ch := range got {
			if ch != [2]string{"abort", "replan"} || !wantReplan[k] {
				t.Errorf("degrade: %v %s → %s, want only the expected aborts turned into re-plans", k, ch[0], ch[1])
			}
		}
		for k := range wantReplan {
			if _, ok := got[k]; !ok {
				t.Errorf("degrade: abort of idempotent task %v not re-planned", k)
			}
		}
		// fail-closed: every recorded re-plan becomes an abort, nothing else.
		got = diffs("fail-closed")
		if len(got) != len(recorded["replan"]) {
			t.Errorf("fail-closed changed %d verdicts, want the %d re-plans", len(got), len(recorded["replan"]))
		}
		for _, k := range recorded["replan"] {
			if got[k] != [2]string{"replan", "abort"} {
				t.Errorf("fail-closed: re-plan %v became %v, want abort", k, got[k])
			}
		}
		// A rules file that disables the rules behind every abort.
		rules := filepath.Join(t.TempDir(), "rules.json")
		os.WriteFile(rules, []byte(`{"severity":{"interface-changed":"warning"},"disable":["skill-removed"]}`), 0o600)
		text := replayCLI(t, dir, "--reevaluate", "--rules", rules)
		if !strings.Contains(text, "interface-changed as warning") || !strings.Contains(text, "would differ") {
			t.Errorf("reevaluate --rules text:\n%s", text)
		}
	})

	t.Run("deterministic", func(t *testing.T) {
		task := *firstVerdict.TaskID
		var agent string
		for _, l := range all {
			if *l.TaskID == task {
				agent = *l.AgentURL
				break
			}
		}
		for _, args := range [][]string{
			{"--reevaluate", "--posture", "degrade"},
			{"--reevaluate", "--posture", "fail-closed", "--format", "json"},
			{"--task", task},
			{"--task", task, "--format", "json"},
			{"--agent", agent, "--format", "html"},
			{"--agent", agent, "--cards"},
		} {
			a, b := replayCLI(t, dir, args...), replayCLI(t, dir, args...)
			if a != b {
				t.Errorf("replay %v differs between two runs", args)
			}
		}
	})

	t.Run("card history", func(t *testing.T) {
		agent := *firstVerdict.AgentURL
		text := replayCLI(t, dir, "--agent", agent, "--cards")
		if !strings.Contains(text, "card version(s)") || !strings.Contains(text, "changelog") {
			t.Errorf("--cards text:\n%s", text)
		}
		out := replayCLI(t, dir, "--agent", agent, "--cards", "--format", "json")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 {
			t.Fatalf("--cards --format json: %d versions, want at least 2 for an agent with drift:\n%s", len(lines), out)
		}
		var prev time.Time
		for i, l := range lines {
			var v struct {
				AgentURL  string    `json:"agentUrl"`
				Digest    string    `json:"digest"`
				FirstSeen time.Time `json:"firstSeen"`
				LastSeen  time.Time `json:"lastSeen"`
				Change    *struct {
					Findings []any `json:"findings"`
				} `json:"change"`
			}
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatal(err)
			}
			if v.AgentURL != agent || !strings.HasPrefix(v.Digest, "sha256:") || v.LastSeen.Before(v.FirstSeen) || v.FirstSeen.Before(prev) {
				t.Errorf("version %d = %s", i, l)
			}
			if (i == 0) != (v.Change == nil) {
				t.Errorf("version %d change = %v (only the first has none)", i, v.Change)
			}
			prev = v.FirstSeen
		}
	})

	t.Run("html", func(t *testing.T) {
		var agent string
		for _, l := range all {
			if l.Kind == "verdict" && strings.Contains(string(l.Data), `"action":"abort"`) {
				agent = *l.AgentURL
				break
			}
		}
		page := filepath.Join(t.TempDir(), "agent.html")
		replayCLI(t, dir, "--agent", agent, "--format", "html", "--out", page)
		rendertest.CheckPage(t, page, 1)
		// A window of every agent: 1.5s from the first verdict on.
		var since time.Time
		for _, l := range all {
			if l.Kind == "verdict" {
				since = l.Time
				break
			}
		}
		until := since.Add(1500 * time.Millisecond)
		window := filepath.Join(t.TempDir(), "window.html")
		replayCLI(t, dir, "--since", since.Format(time.RFC3339Nano), "--until", until.Format(time.RFC3339Nano), "--format", "html", "--out", window)
		rendertest.CheckPage(t, window, 2)
		out := parseReplayJSON(t, replayCLI(t, dir, "--since", since.Format(time.RFC3339Nano), "--until", until.Format(time.RFC3339Nano), "--format", "json"))
		// The lines of the whole history within the window, but for those
		// stored later after their time than a window's reads wait
		// (replay.Options.Latency, FetchLatency for the card events
		// stream): replay leaves them out by design, and on a busy machine
		// an event can be stored seconds after its time.
		cfg := store.DefaultConfig()
		stoppedAt := map[string]time.Time{
			cfg.LifecycleStream: until.Add(replay.DefaultLatency),
			cfg.EventsStream:    until.Add(replay.DefaultFetchLatency),
		}
		var inWindow []string
		for _, l := range all {
			if l.Time.Before(since) || l.Time.After(until) {
				continue
			}
			stop, ok := stoppedAt[l.Stream]
			if !ok {
				t.Fatalf("line %s of stream %q, want %s or %s", l.ID, l.Stream, cfg.LifecycleStream, cfg.EventsStream)
			}
			if l.Stored.After(stop) {
				t.Logf("window %s..%s: %s %s at %s stored late, at %s: left out", since, until, l.Type, l.ID, l.Time, l.Stored)
				continue
			}
			inWindow = append(inWindow, l.Stream+" "+l.ID)
		}
		var got []string
		for _, l := range out {
			got = append(got, l.Stream+" "+l.ID)
		}
		slices.Sort(inWindow)
		slices.Sort(got)
		if !slices.Equal(got, inWindow) || len(out) == 0 || out[0].Time.Before(since) || out[len(out)-1].Time.After(until) {
			t.Errorf("window %s..%s: %d lines, want the %d of the whole history within it\nonly in the window: %v\nonly in the history: %v",
				since, until, len(out), len(inWindow), missing(got, inWindow), missing(inWindow, got))
		}
		cards := filepath.Join(t.TempDir(), "cards.html")
		replayCLI(t, dir, "--agent", agent, "--cards", "--format", "html", "--out", cards)
		rendertest.CheckPage(t, cards, 1)
		rendertest.RenderInChromium(t, page)
	})

	if after := treeHash(t, dir); after != before {
		t.Errorf("replay changed the store directory %s", dir)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("replay left %d file(s) in the temp dir: %v", len(left), left[0].Name())
	}
}

// findingRules lists the rule of each finding.
func findingRules(fs []struct {
	Rule  string `json:"rule"`
	Skill string `json:"skill"`
}) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

// unknownPin reports a verdict on a pin carddrift never saw the body of:
// no pinned fingerprint, and pinned-card-unknown among its findings.
func unknownPin(t *testing.T, l replayLine) bool {
	t.Helper()
	var d struct {
		Pinned struct {
			Fingerprint string `json:"fingerprint"`
		} `json:"pinned"`
		Findings []struct {
			Rule string `json:"rule"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(l.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d.Pinned.Fingerprint == "" && slices.ContainsFunc(d.Findings, func(f struct {
		Rule string `json:"rule"`
	}) bool {
		return f.Rule == detector.RulePinnedCardUnknown
	})
}

// missing returns the elements of a (sorted) that b (sorted) lacks.
func missing(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			out = append(out, x)
		}
	}
	return out
}

func TestReplayUsage(t *testing.T) {
	dir := t.TempDir()
	badRules := filepath.Join(dir, "rules.json")
	os.WriteFile(badRules, []byte(`{"disable":["no-such-rule"]}`), 0o600)
	for _, args := range [][]string{
		{"replay", "--cards"},
		{"replay", "--format", "xml"},
		{"replay", "--posture", "degrade"},
		{"replay", "--reevaluate", "--posture", "yolo"},
		{"replay", "--reevaluate", "--rules", badRules},
		{"replay", "--reevaluate", "--rules", filepath.Join(dir, "missing.json")},
		{"replay", "--reevaluate", "--format", "html"},
		{"replay", "--agent", "ftp://x", "--cards"},
		{"replay", "--since", "yesterday"},
		{"replay", "--since", "1m", "--until", "1h"},
		{"replay", "--nats-url", "nats://127.0.0.1:1", "--data-dir", dir},
		{"replay", "--data-dir", filepath.Join(dir, "missing")},
		{"replay", "--data-dir", dir},
		{"replay", "extra"},
	} {
		if code, _, stderr := runCLI(t, "", args...); code != exitUsage {
			t.Errorf("carddrift %v = %d, want %d (stderr %q)", args, code, exitUsage, stderr)
		}
	}
}

// TestOfflineCopiesTheRange: a file store whose stream spans several
// message blocks, copied for a range that starts after the first ones,
// leaves those blocks out; the server opens the copy with every message
// stored within the range, the original's files are byte-identical
// afterwards, and a stream copied empty and the consumers are left out.
func TestOfflineCopiesTheRange(t *testing.T) {
	dir := t.TempDir()
	srv, nc, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.StoreDir = dir })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A MaxBytes this small makes the server choose its smallest blocks
	// (32 kB): the 750 messages below fill several.
	for _, name := range []string{"LIFE", "OTHER"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"},
			Storage: jetstream.FileStorage, MaxBytes: 120_000}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "LIFE", jetstream.ConsumerConfig{Durable: "worker"}); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 80)
	publish := func(from, n int) {
		for i := from; i < from+n; i++ {
			if _, err := js.Publish(ctx, fmt.Sprintf("life.%d", i), payload); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(0, 600)
	mark := time.Now() // after the server stored (and acknowledged) the first 600
	publish(600, 150)
	if _, err := js.Publish(ctx, "other.x", payload); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	srv.Shutdown()
	srv.WaitForShutdown()
	before := treeHash(t, dir)

	streams := filepath.Join(dir, "jetstream", "$G", "streams")
	blocks, _ := filepath.Glob(filepath.Join(streams, "LIFE", "msgs", "*.blk"))
	if len(blocks) < 3 {
		t.Fatalf("the stream has %d blocks, want at least 3", len(blocks))
	}
	cp := t.TempDir()
	sel := offlineCopy{empty: map[string]bool{"OTHER": true}, noConsumers: true, ranges: map[string]replay.Range{"LIFE": {From: mark}}}
	if err := copyTree(dir, cp, sel); err != nil {
		t.Fatal(err)
	}
	copied, _ := filepath.Glob(filepath.Join(cp, "jetstream", "$G", "streams", "LIFE", "msgs", "*.blk"))
	if len(copied) == 0 || len(copied) >= len(blocks) {
		t.Fatalf("copied %d of %d blocks, want the last ones only", len(copied), len(blocks))
	}
	if left, _ := os.ReadDir(filepath.Join(cp, "jetstream", "$G", "streams", "LIFE", "obs")); len(left) != 0 {
		t.Errorf("the copy has %d consumer(s)", len(left))
	}

	off := &offline{dir: cp}
	defer off.Close()
	var err error
	if off.srv, err = server.NewServer(&server.Options{JetStream: true, StoreDir: cp, DontListen: true, NoSigs: true, NoLog: true}); err != nil {
		t.Fatal(err)
	}
	off.srv.Start()
	if !off.srv.ReadyForConnections(15 * time.Second) {
		t.Fatal("embedded server on the copy not ready")
	}
	onc, err := off.connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer onc.Close()
	ojs, _ := jetstream.New(onc)
	s, err := ojs.Stream(ctx, "LIFE")
	if err != nil {
		t.Fatal(err)
	}
	st := s.CachedInfo().State
	// Every message from 601 on was stored at or after mark.
	if st.FirstSeq <= 1 || st.FirstSeq > 601 || st.LastSeq != 750 || st.Msgs != st.LastSeq-st.FirstSeq+1 {
		t.Errorf("copy holds %d..%d (%d messages), want a suffix holding 601..750", st.FirstSeq, st.LastSeq, st.Msgs)
	}
	if o, err := ojs.Stream(ctx, "OTHER"); err != nil || o.CachedInfo().State.Msgs != 0 {
		t.Errorf("OTHER in the copy: %v, want an empty stream", err)
	}
	if after := treeHash(t, dir); after != before {
		t.Error("copying changed the store directory")
	}
}

// FuzzBlockHeader: any bytes as a block's first record header either give a
// time within the bounds parseBlockHeader checks or are refused; nothing
// panics.
func FuzzBlockHeader(f *testing.F) {
	real := make([]byte, 22)
	binary.LittleEndian.PutUint32(real, 0x80000220)
	binary.LittleEndian.PutUint64(real[4:], 27630)
	binary.LittleEndian.PutUint64(real[12:], uint64(time.Date(2026, 12, 1, 20, 36, 6, 0, time.UTC).UnixNano()))
	binary.LittleEndian.PutUint16(real[20:], 38)
	f.Add(real)
	f.Add([]byte{})
	f.Add(make([]byte, 22))
	f.Fuzz(func(t *testing.T, b []byte) {
		tm, ok := parseBlockHeader(b)
		if ok && (tm.Year() < 2000 || tm.After(time.Now().Add(25*time.Hour)) || len(b) < 22) {
			t.Errorf("parseBlockHeader(%x) = %s, true", b, tm)
		}
		if !ok && !tm.IsZero() {
			t.Errorf("parseBlockHeader(%x) refused it with a time %s", b, tm)
		}
	})
}
