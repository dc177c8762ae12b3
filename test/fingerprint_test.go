package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
)

// The fingerprint write-up: a fleet of 40 A2A v1.0 agents whose cards say
// version "1.0"; 3 of them are redeployed with summarize-v2 emitting
// application/json instead of text/markdown, version unchanged, and their
// ETag derived from the version alone, so every If-None-Match revalidation
// answers 304 on the stale card. Only an unconditional fetch sees the change:
// forced by evidence (an artifact of an undeclared type) or due by the
// periodic full-fetch interval.

const (
	fpAgents      = 40
	fpSummarize   = "summarize-v2"
	fpClassify    = "classify"
	fpMarkdown    = "text/markdown"
	fpJSON        = "application/json"
	fpCardVersion = "1.0"
)

// fpMutated are the agents redeployed without a version bump (3 of 40).
var fpMutated = map[int]bool{7: true, 19: true, 33: true}

// fpCard is a v1.0-shaped card (supportedInterfaces with a per-interface
// protocolVersion) with summarize-v2 emitting summarizeOut.
func fpCard(agentURL string, i int, summarizeOut string) string {
	return fmt.Sprintf(`{
  "name": "fleet-worker-%02d",
  "description": "Worker agent %02d behind the shared discovery service",
  "version": %q,
  "supportedInterfaces": [{"url": "%s/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
  "capabilities": {"streaming": true, "pushNotifications": false},
  "defaultInputModes": ["text/plain"],
  "defaultOutputModes": ["text/plain"],
  "skills": [
    {"id": %q, "name": "Summarize", "description": "Summarizes a document", "tags": ["text"],
     "inputModes": ["text/plain"], "outputModes": [%q]},
    {"id": %q, "name": "Classify", "description": "Classifies a document", "tags": ["text"],
     "inputModes": ["text/plain"], "outputModes": ["application/json"]},
    {"id": "extract-entities", "name": "Extract entities", "description": "Named entities", "tags": ["text"],
     "inputModes": ["text/plain", "text/html"], "outputModes": ["application/json"]}
  ]
}`, i, i, fpCardVersion, agentURL, fpSummarize, summarizeOut, fpClassify)
}

// newVersionAgent starts an agent whose ETag is derived from its card's
// version only and that honours If-None-Match, as the write-up's servers
// did.
func newVersionAgent(t testing.TB, cacheControl string) *servicetest.Agent {
	a := servicetest.NewAgent(t, "")
	a.SetCacheControl(cacheControl)
	a.SetETag(`"v` + fpCardVersion + `"`) // the version, not the content
	return a
}

// fpFleet is the 40 agents and their two tasks each.
type fpFleet struct {
	agents []*servicetest.Agent
}

func fpSumTask(i int) string { return fmt.Sprintf("fp-%02d-sum", i) }
func fpClsTask(i int) string { return fmt.Sprintf("fp-%02d-cls", i) }

func newFPFleet(t *testing.T, cacheControl string) *fpFleet {
	f := &fpFleet{}
	for i := range fpAgents {
		a := newVersionAgent(t, cacheControl)
		card := fpCard(a.URL(), i, fpMarkdown)
		if _, err := detector.Parse([]byte(card)); err != nil {
			t.Fatalf("fleet card %d does not parse: %v", i, err)
		}
		a.Set(card)
		f.agents = append(f.agents, a)
	}
	return f
}

// submitAll submits, per agent, a fail-closed summarize-v2 task that needs
// text/markdown output and a fail-closed classify task, both pinned on first
// fetch, and waits for the 80 pins.
func (f *fpFleet) submitAll(t *testing.T, r *rig, out *outbound) {
	f.submit(t, r)
	f.waitPinned(t, out)
}

// submit publishes submitAll's 80 submissions.
func (f *fpFleet) submit(t *testing.T, r *rig) {
	ctx := context.Background()
	for i, a := range f.agents {
		must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: fpSumTask(i), AgentURL: a.URL(), SkillID: fpSummarize,
			Requires: events.Requires{InputModes: []string{"text/plain"}, OutputModes: []string{fpMarkdown}},
			Posture:  detector.FailClosed}))
		must(t, r.emit.Submitted(ctx, events.Submitted{TaskID: fpClsTask(i), AgentURL: a.URL(), SkillID: fpClassify,
			Requires: events.Requires{InputModes: []string{"text/plain"}, OutputModes: []string{fpJSON}},
			Posture:  detector.FailClosed}))
	}
}

// waitPinned waits for submit's 80 pins, each made by a first fetch.
func (f *fpFleet) waitPinned(t *testing.T, out *outbound) {
	out.waitFor(t, "80 pins", func(o *outbound) bool { return len(o.all(events.TypePinned)) == 2*fpAgents })
	for _, ev := range out.all(events.TypePinned) {
		if p := ev.Data.(events.Pinned); p.Source != events.PinFirstFetch {
			t.Fatalf("card.pinned %+v: want a first-fetch pin", p)
		}
	}
}

// redeploy changes summarize-v2's output modes on the 3 mutated agents,
// version and ETag unchanged.
func (f *fpFleet) redeploy() {
	for i, a := range f.agents {
		if fpMutated[i] {
			a.Set(fpCard(a.URL(), i, fpJSON))
		}
	}
}

// transitionAll publishes a plain capability-dependent transition (a
// streaming request: the cards declare streaming) for every task.
func (f *fpFleet) transitionAll(t *testing.T, r *rig) {
	ctx := context.Background()
	for i, a := range f.agents {
		for _, task := range []string{fpSumTask(i), fpClsTask(i)} {
			must(t, r.emit.Request(ctx, events.Request{TaskID: task, AgentURL: a.URL(), Method: "SendStreamingMessage", Attempt: 1}))
		}
	}
}

// checkVerdicts asserts the write-up's outcome: exactly the 3 mutated agents'
// summarize-v2 tasks abort, every card.drift of theirs with
// skill-output-modes-changed and content-changed-without-version-bump, and
// one of them with each of wantRules; no other task aborts; the unchanged
// agents' tasks see no drift at all; no card.drift is stored twice; and no
// card is reported unreachable.
func (f *fpFleet) checkVerdicts(t *testing.T, out *outbound, wantRules ...string) {
	t.Helper()
	var aborted []string
	for _, ev := range out.all(events.TypeDrift) {
		d := ev.Data.(events.Drift)
		if d.Verdict.Action == detector.Abort {
			aborted = append(aborted, d.TaskID)
		}
	}
	slices.Sort(aborted)
	aborted = slices.Compact(aborted)
	var want []string
	for i := range fpAgents {
		if fpMutated[i] {
			want = append(want, fpSumTask(i))
		}
	}
	if !slices.Equal(aborted, want) {
		t.Errorf("aborted tasks = %v, want %v", aborted, want)
	}
	for i := range fpAgents {
		sum, cls := out.drifts(fpSumTask(i)), out.drifts(fpClsTask(i))
		if !fpMutated[i] {
			if len(sum)+len(cls) > 0 {
				t.Errorf("agent %d (card unchanged): drift %+v %+v, want none", i, sum, cls)
			}
			continue
		}
		if len(sum) == 0 {
			t.Errorf("task %s: no card.drift", fpSumTask(i))
		}
		seen := map[string]bool{}
		for _, d := range sum {
			rules := rulesOf(d)
			for r := range rules {
				seen[r] = true
			}
			for _, r := range []string{detector.RuleSkillOutputModesChanged, detector.RuleContentChangedWithoutVersion} {
				if !rules[r] {
					t.Errorf("task %s: rules %v, want %s", fpSumTask(i), keys(rules), r)
				}
			}
			if d.Pinned.Fingerprint == d.Live.Fingerprint {
				t.Errorf("task %s: fingerprint unchanged (%s) across the redeploy", fpSumTask(i), d.Live.Fingerprint)
			}
		}
		for _, r := range wantRules {
			if !seen[r] {
				t.Errorf("task %s: no card.drift with %s (rules seen %v)", fpSumTask(i), r, keys(seen))
			}
		}
		for _, d := range cls {
			if d.Verdict.Action != detector.Continue {
				t.Errorf("task %s (other skill): verdict %s (%s), want continue", fpClsTask(i), d.Verdict.Action, d.Verdict.Reason)
			}
		}
	}
	ids := map[string]bool{}
	for _, ev := range out.all(events.TypeDrift) {
		if ids[ev.ID] {
			t.Errorf("card.drift %s stored twice", ev.ID)
		}
		ids[ev.ID] = true
	}
	if u := out.all(events.TypeUnreachable); len(u) > 0 {
		t.Errorf("card.unreachable: %v", servicetest.Summary(u))
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Evidence: the lease is long (the write-up's clients cached for an hour) and
// periodic full fetches are off, so plain transitions never reach the agents;
// an artifact of an undeclared type forces the unconditional fetch.
func TestFingerprintFleetEvidenceForcedFetch(t *testing.T) {
	r := newRig(t, testConfig())
	fleet := newFPFleet(t, "max-age=3600")
	out := r.collect()
	// Both tasks of an agent are submitted before the worker fetches its
	// card, so one fetch pins both: a lease fetched before a task was
	// submitted would be rechecked with an unconditional fetch
	// (task.Submission.Recheck), and on a busy machine the worker's first
	// fetch can land between an agent's two submissions.
	fleet.submit(t, r)
	r.startWorker("fp-evidence", func(o *worker.Options) {
		o.Fetch.FullFetchInterval = -1 // only evidence can catch it
	})
	ctx := context.Background()

	fleet.waitPinned(t, out)
	for i, a := range fleet.agents {
		if n := a.Requests(); n != 1 {
			t.Fatalf("agent %d: %d card requests for two pins, want 1 (one fetch per lease)", i, n)
		}
	}
	fleet.redeploy()

	// Plain transitions: the lease answers, nobody sees the change.
	fleet.transitionAll(t, r)
	r.drained(t, 20*time.Second)
	if d := out.all(events.TypeDrift); len(d) > 0 {
		t.Fatalf("drift before any evidence (the lease still holds): %v", servicetest.Summary(d))
	}

	// Artifacts: the mutated agents' summarize tasks receive JSON, which
	// their pinned skill never declared; everyone else gets what was planned.
	for i, a := range fleet.agents {
		mt := fpMarkdown
		if fpMutated[i] {
			mt = fpJSON
		}
		must(t, r.emit.Artifact(ctx, events.Artifact{TaskID: fpSumTask(i), AgentURL: a.URL(), ArtifactID: "summary", MediaTypes: []string{mt}}))
		must(t, r.emit.Artifact(ctx, events.Artifact{TaskID: fpClsTask(i), AgentURL: a.URL(), ArtifactID: "labels", MediaTypes: []string{fpJSON}}))
	}
	r.drained(t, 20*time.Second)
	// Then more plain transitions: the mutated agents' classify tasks now meet
	// the new card through the lease and must continue.
	fleet.transitionAll(t, r)
	r.drained(t, 20*time.Second)

	fleet.checkVerdicts(t, out, detector.RuleArtifactTypeUndeclared)
	for i, a := range fleet.agents {
		want := int64(1)
		if fpMutated[i] {
			want = 2 // the pin, then one forced unconditional fetch
		}
		if n, full := a.Requests(), a.FullRequests(); n != want || full != want {
			t.Errorf("agent %d: %d requests (%d unconditional), want %d", i, n, full, want)
		}
	}
	for i := range fpAgents {
		if !fpMutated[i] {
			continue
		}
		// The artifact's drift (with artifact-type-undeclared), then the next
		// plain transition's (without): two rule sets, two events.
		if sum := out.drifts(fpSumTask(i)); len(sum) != 2 {
			t.Errorf("task %s: %d card.drift, want 2", fpSumTask(i), len(sum))
		}
		if cls := out.drifts(fpClsTask(i)); len(cls) != 1 {
			t.Errorf("task %s: %d card.drift (continue), want 1", fpClsTask(i), len(cls))
		}
	}
}

// Periodic full fetch: the lease is short, so transitions revalidate with
// If-None-Match and get 304 on the stale card; once FullFetchInterval has
// passed, a plain transition fetches unconditionally and sees the change.
func TestFingerprintFleetPeriodicFullFetch(t *testing.T) {
	const fullEvery = 10 * time.Minute
	r := newRig(t, testConfig())
	fleet := newFPFleet(t, "max-age=60")
	out := r.collect()
	clock := servicetest.NewClock()
	r.startWorker("fp-full", func(o *worker.Options) {
		o.Now = clock.Now
		o.Fetch.FullFetchInterval = fullEvery
	})

	fleet.submitAll(t, r, out)
	fleet.redeploy()

	// Lease expired, full fetch not yet due: every agent is revalidated once
	// and answers 304 on its version-derived ETag.
	clock.Advance(2 * time.Minute)
	fleet.transitionAll(t, r)
	r.drained(t, 20*time.Second)
	for i, a := range fleet.agents {
		if n, nm := a.Requests(), a.NotModified(); n != 2 || nm != 1 {
			t.Errorf("agent %d: %d requests, %d answered 304; want 2 and 1", i, n, nm)
		}
	}
	if d := out.all(events.TypeDrift); len(d) > 0 {
		t.Fatalf("drift behind a 304 (the body was never read): %v", servicetest.Summary(d))
	}

	// The periodic unconditional fetch is due.
	clock.Advance(fullEvery)
	fleet.transitionAll(t, r)
	r.drained(t, 20*time.Second)

	fleet.checkVerdicts(t, out)
	for i, a := range fleet.agents {
		if n, full := a.Requests(), a.FullRequests(); n != 3 || full != 2 {
			t.Errorf("agent %d: %d requests (%d unconditional), want 3 (2)", i, n, full)
		}
	}
	for i := range fpAgents {
		if !fpMutated[i] {
			continue
		}
		sum, cls := out.drifts(fpSumTask(i)), out.drifts(fpClsTask(i))
		if len(sum) != 1 || len(cls) != 1 {
			t.Errorf("agent %d: %d and %d card.drift for its two tasks, want 1 each", i, len(sum), len(cls))
		}
		for _, d := range sum {
			if rulesOf(d)[detector.RuleArtifactTypeUndeclared] {
				t.Errorf("task %s: artifact-type-undeclared without an artifact", fpSumTask(i))
			}
		}
	}
}
