package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/inspect/impact"
	"github.com/carddrift/carddrift/events/inspect/render/rendertest"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
)

// TestImpactIsTheWorkersVerdict records a demo, asks impact what a changed
// card would do to every live task of its busiest agent, then deploys that
// card at the agent's address and has a worker judge a capability-dependent
// transition of each of those tasks on the same store: every task gets
// exactly the action and findings (rule, severity, touches) impact said,
// and a task impact says continues without findings gets no card.drift.
func TestImpactIsTheWorkersVerdict(t *testing.T) {
	dir, code, stdout, stderr := recordDemo(t, "--agents", "8", "--seed", "5")
	if code != exitOK {
		t.Fatalf("demo exit %d\n%s\n%s", code, stdout, stderr)
	}

	// The recorded store, on a private copy a worker may write.
	off, err := openOffline(dir, offlineCopy{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(off.Close)
	nc, err := off.connect("impact-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	cfg := store.DefaultConfig()
	cfg.Partitions, cfg.Storage, cfg.AckWait = 4, jetstream.FileStorage, 10*time.Second
	st, err := store.Bind[task.Pin](ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}

	// The busiest agent whose replicas agree.
	byAgent := map[string][]task.Pin{}
	must(t, st.Pins.Scan(ctx, func(p task.Pin, _ uint64) error {
		byAgent[p.AgentURL] = append(byAgent[p.AgentURL], p)
		return nil
	}))
	leases := map[string]store.Lease{} // by agent host
	must(t, st.Leases.Scan(ctx, func(l store.Lease, _ uint64) error {
		if h, err := events.AgentHost(l.CardURL); err == nil && l.Digest != "" {
			leases[h] = l
		}
		return nil
	}))
	agent, liveDigest := "", ""
	for a, ps := range byAgent {
		h, _ := events.AgentHost(a)
		l, ok := leases[h]
		if !ok || l.Replicas.Disagree(time.Now(), 2*time.Minute) {
			continue
		}
		if agent == "" || len(ps) > len(byAgent[agent]) {
			agent, liveDigest = a, l.Digest
		}
	}
	if agent == "" {
		t.Fatal("the demo store has no agent with pins and a lease")
	}
	live, err := st.Cards.Get(ctx, liveDigest)
	must(t, err)
	proposed := changed(t, live)
	pDigest, _ := detector.Digest(proposed)
	cardFile := filepath.Join(t.TempDir(), "proposed.json")
	must(t, os.WriteFile(cardFile, proposed, 0o600))

	code, stdout, stderr = runCLI(t, "", "impact", "--data-dir", dir, "--agent", agent, "--card", cardFile, "--json")
	if code != exitOK {
		t.Fatalf("impact exit %d\n%s", code, stderr)
	}
	var rep impact.Report
	must(t, json.Unmarshal([]byte(stdout), &rep))
	if len(rep.Tasks) != len(byAgent[agent]) || rep.Card.Digest != pDigest {
		t.Fatalf("impact judged %d tasks of card %s, want the agent's %d of %s", len(rep.Tasks), rep.Card.Digest, len(byAgent[agent]), pDigest)
	}
	if rep.Counts.Abort+rep.Counts.Replan == 0 {
		t.Fatalf("the changed card aborts and re-plans nothing (counts %+v): not a test", rep.Counts)
	}
	if code, _, _ := runCLI(t, "", "impact", "--data-dir", dir, "--agent", agent, "--card", cardFile, "--fail-on", "replan"); code != exitFindings {
		t.Errorf("impact --fail-on replan = %d, want %d", code, exitFindings)
	}

	// Deploy: the proposed card at the agent's own address.
	u, _ := url.Parse(agent)
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Skipf("the demo agent's address %s is taken now: %v", u.Host, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/.well-known/agent") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Type", "application/json")
		w.Write(proposed)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	out := servicetest.Collect(t, js, cfg)
	w, err := worker.New(js, worker.Options{Name: "deploy", Config: cfg, Pins: st.Pins, Cards: st.Cards, Leases: st.Leases,
		Fetch: servicetest.LoopbackFetch(), DrainTimeout: 5 * time.Second})
	must(t, err)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t.Cleanup(func() { stop(); <-done; w.Close() })
	emit, err := client.NewEmitter(js, "urn:client:impact-test")
	must(t, err)
	t.Cleanup(func() { emit.Close(context.Background()) })
	for _, tk := range rep.Tasks {
		must(t, emit.Request(ctx, events.Request{TaskID: tk.TaskID, AgentURL: agent, Method: "tasks/resubscribe", Attempt: 1}))
	}
	servicetest.Flushed(t, emit, 30*time.Second)
	servicetest.Drained(t, js, cfg, 30*time.Second)
	out.CaughtUp(t) // what the worker published before it acknowledged is all collected

	verdicts := map[string]events.Drift{}
	for _, ev := range out.All(events.TypeDrift) {
		if d := ev.Data.(events.Drift); d.Live.Digest == pDigest {
			verdicts[d.TaskID] = d
		}
	}
	for _, tk := range rep.Tasks {
		d, published := verdicts[tk.TaskID]
		if !published {
			if tk.Action != detector.Continue || len(tk.Findings) != 0 {
				t.Errorf("task %s: impact says %s %v, the worker published no card.drift", tk.TaskID, tk.Action, tk.Findings)
			}
			continue
		}
		var got []impact.Finding
		for _, f := range d.Findings {
			got = append(got, impact.Finding{Rule: f.Rule, Severity: f.Severity, Touches: f.Touches})
		}
		if d.Verdict.Action != tk.Action || d.Verdict.Posture != tk.Posture || !slices.Equal(got, tk.Findings) {
			t.Errorf("task %s: worker %s/%s %v; impact %s/%s %v", tk.TaskID, d.Verdict.Action, d.Verdict.Posture, got, tk.Action, tk.Posture, tk.Findings)
		}
	}
	t.Logf("agent %s: %d tasks, impact abort %d, replan %d, continue %d; the worker published %d card.drift, all as impact said",
		agent, len(rep.Tasks), rep.Counts.Abort, rep.Counts.Replan, rep.Counts.Continue, len(verdicts))
}

// changed is a vendor's next card: streaming off, its last skill withdrawn
// (when it has more than one), a description edited.
func changed(t *testing.T, raw []byte) []byte {
	t.Helper()
	var m map[string]any
	must(t, json.Unmarshal(raw, &m))
	caps, _ := m["capabilities"].(map[string]any)
	if caps == nil {
		caps = map[string]any{}
	}
	caps["streaming"] = false
	m["capabilities"] = caps
	if skills, ok := m["skills"].([]any); ok && len(skills) > 1 {
		m["skills"] = skills[:len(skills)-1]
	}
	m["description"] = "The next release."
	b, err := json.Marshal(m)
	must(t, err)
	return b
}

func TestImpactUsage(t *testing.T) {
	card := writeCard(t, cardT0)
	for _, args := range [][]string{
		{"impact"},
		{"impact", "--agent", "https://a.example"},
		{"impact", "--card", card},
		{"impact", "--agent", "ftp://x", "--card", card},
		{"impact", "--agent", "https://a.example", "--card", card, "--fail-on", "continue"},
		{"impact", "--agent", "https://a.example", "--card", "https://a.example/card.json"},
		{"impact", "--agent", "https://a.example", "--card", card, "--nats-url", "nats://127.0.0.1:1", "--data-dir", t.TempDir()},
		{"impact", "--agent", "https://a.example", "--card", card, "extra"},
	} {
		if code, _, stderr := runCLI(t, "", args...); code != exitUsage {
			t.Errorf("carddrift %v = %d, want %d (stderr %q)", args, code, exitUsage, stderr)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestImpactTextNotJudged: the tasks a proposed card does not judge (pinned
// on the other card of the two) are listed under the counts, with why, and
// the header says so; the JSON keeps the contract's four members.
func TestImpactTextNotJudged(t *testing.T) {
	rep := &impact.Report{AgentURL: "https://ledger.example", Card: impact.Proposed{Digest: "sha256:ab"},
		Tasks:   []impact.Task{{TaskID: "plain", Action: detector.Abort, Posture: detector.FailClosed, Skill: "summarize"}},
		Counts:  impact.Counts{Abort: 1},
		Skipped: []impact.Skipped{{TaskID: "ext", Reason: impact.SkipExtendedPin}}}
	var b bytes.Buffer
	writeImpactText(&b, rep)
	for _, want := range []string{"impact of card sha256:ab on https://ledger.example: 1 live task(s) judged, 1 not\n",
		"not judged: 1 task(s)\n", "  ext  " + impact.SkipExtendedPin + "\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	j, err := json.Marshal(rep)
	must(t, err)
	var shape map[string]any
	must(t, json.Unmarshal(j, &shape))
	if len(shape) != 4 {
		t.Errorf("JSON members: %s", j)
	}
}

// fleetRig runs a worker over agents that make every part of the fleet
// view show: one whose card is named "<script>" and whose replicas come to
// disagree, one offering the same skill under another contract, one down.
func fleetRig(t *testing.T) *servicetest.Rig {
	t.Helper()
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
	ctx := context.Background()
	hostile := strings.Replace(servicetest.WriteupT0, `"name":"Vendor B"`, `"name":"<script>document.title='owned'</script>"`, 1)
	hostile2 := strings.Replace(servicetest.WriteupT40, `"name":"Vendor B"`, `"name":"<script>document.title='owned'</script>"`, 1)
	a, b, c := servicetest.NewAgent(t, hostile), servicetest.NewAgent(t, servicetest.WriteupT40), servicetest.NewAgent(t, servicetest.WriteupT0)
	c.SetStatus(503)
	for i, ag := range []*servicetest.Agent{a, a, b, c} {
		must(t, r.Emit.Submitted(ctx, events.Submitted{TaskID: "t" + string(rune('0'+i)), AgentURL: ag.URL(), SkillID: "summarize"}))
	}
	r.Drained(t, servicetest.WaitTimeout)
	for _, card := range []string{hostile2, hostile, hostile2, hostile} {
		a.Set(card)
		n := a.Requests()
		must(t, r.Emit.Request(ctx, events.Request{TaskID: "t0", AgentURL: a.URL(), Method: "message/stream", Attempt: 1}))
		r.Eventually("the fetch", func() bool { return a.Requests() > n })
		r.Drained(t, servicetest.WaitTimeout)
	}
	return r
}

func TestFleetCommand(t *testing.T) {
	r := fleetRig(t)
	code, stdout, stderr := runCLI(t, "", "fleet", "--nats-url", r.URL(), "--json")
	if code != exitOK {
		t.Fatalf("fleet --json exit %d: %s", code, stderr)
	}
	var fl census.Fleet
	must(t, json.Unmarshal([]byte(stdout), &fl))
	split, down := 0, 0
	for _, a := range fl.Agents {
		if a.SplitBrain != nil {
			split++
		}
		if a.UnreachableSince != nil {
			down++
		}
	}
	if len(fl.Agents) != 3 || split != 1 || down != 1 || len(fl.Skills) != 1 || fl.Skills[0].Consistent {
		t.Errorf("fleet --json = %s", stdout)
	}

	code, stdout, _ = runCLI(t, "", "fleet", "--nats-url", r.URL())
	for _, want := range []string{"3 agent(s), 1 in split brain, 1 unreachable", "split brain since", "unreachable since", "summarize", "INCONSISTENT", "streaming"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("fleet text has no %q:\n%s", want, stdout)
		}
	}

	page := filepath.Join(t.TempDir(), "fleet.html")
	if code, _, stderr := runCLI(t, "", "fleet", "--nats-url", r.URL(), "--format", "html", "--out", page); code != exitOK {
		t.Fatalf("fleet --format html exit %d: %s", code, stderr)
	}
	rendertest.CheckPage(t, page, 1)
	checkFleetPage(t, page)
}

// checkFleetPage: the card's "<script>" name is text, not markup — escaped
// in the source, one script element (the page's own), and in headless
// Chromium the title stays the page's and the name shows as text; the
// screenshot has the abort red of the split-brain agent's details.
func checkFleetPage(t *testing.T, page string) {
	t.Helper()
	b, err := os.ReadFile(page)
	must(t, err)
	src := string(b)
	if strings.Count(src, "<script") != 1 || !strings.Contains(src, "&lt;script&gt;document.title=") {
		t.Errorf("the card name is not escaped:\n%s", src)
	}
	rendertest.RenderHostile(t, page, "fleet")
}
