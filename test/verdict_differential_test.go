package test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/inspect/impact"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

// The card the differential histories start from ("AGENT": the agent's
// URL), and the variants they move to.
const diffCard = `{"name":"Diff","version":"1.0.0","protocolVersion":"1.0.0","url":"AGENT",
"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
"skills":[{"id":"summarize","name":"Summarize","description":"Summarizes text","tags":["text"]}]}`

// diffHistory is one history fed to the four doors: the card the task is
// pinned on (by first fetch, or by a client digest carddrift never stored),
// the cards the agent serves at the task's capability-dependent
// transitions, and what the worker must publish (the anchor that says the
// history is the one meant).
type diffHistory struct {
	name          string
	requireSigned bool
	pinned        func(t *testing.T) string
	unknownDigest bool // the client pins a digest carddrift never saw
	live          []func(t *testing.T) string
	unreachable   bool // the agent then answers 503
	want          detector.Action
	wantRule      string
	// degrade submits the task idempotent under degrade (else fail-closed);
	// wantReplan is the skill id the worker's verdict must re-plan onto.
	degrade    bool
	wantReplan string
	// impactBlind is a rule carddrift impact cannot see, and why: it
	// judges a proposed card against the pins, so it has no split-brain
	// window (no replica serves a card not yet deployed) and fetches
	// nothing. Impact must give the worker's decision without that rule's
	// findings.
	impactBlind, impactBlindWhy string
}

// verdictOf is what one door decided, normalised for comparison: the
// verdict and every finding's rule, severity, path and touches (which say
// the verdict's impacting findings: a card.drift does not list them apart).
type verdictOf struct {
	door     string
	action   detector.Action
	posture  detector.Posture
	reason   string
	replan   string // replanSkill
	findings []findingOf
}

type findingOf struct {
	rule     string
	severity detector.Severity
	path     string
	touches  bool
}

func normalise(door string, v detector.Verdict, fs []detector.Finding) verdictOf {
	out := verdictOf{door: door, action: v.Action, posture: v.Posture, reason: v.Reason, replan: v.ReplanSkill, findings: []findingOf{}}
	for _, f := range fs {
		out.findings = append(out.findings, findingOf{f.Rule, f.Severity, f.Path, f.Touches})
	}
	return out
}

// asImpactSees is v as carddrift impact reports it: findings without paths,
// and none of rule blind ("": every rule).
func (v verdictOf) asImpactSees(blind string) verdictOf {
	out := v
	out.findings = []findingOf{}
	for _, f := range v.findings {
		if f.rule != blind {
			f.path = ""
			out.findings = append(out.findings, f)
		}
	}
	return out
}

func (v verdictOf) same(w verdictOf) bool {
	return v.action == w.action && v.posture == w.posture && v.reason == w.reason && v.replan == w.replan && slices.Equal(v.findings, w.findings)
}

func (v verdictOf) String() string {
	return fmt.Sprintf("%s: %s (%s, replan onto %q) %q %+v", v.door, v.action, v.posture, v.replan, v.reason, v.findings)
}

// TestVerdictDifferential feeds the same histories to the four doors of the
// verdict — the worker (through a real embedded JetStream), replay
// --reevaluate over the recorded store (Reader.Rejudge), carddrift impact
// (impact.Assess of the live card against the stored pins) and the
// planner's Checker — and requires the same findings and verdict from all
// of them: one decision (task.Decide), four shells. Where a door cannot be
// asked, the history says why, and the test holds it to its documented
// answer instead.
func TestVerdictDifferential(t *testing.T) {
	keyA, keyB := servicetest.NewSigningKey(t, "a"), servicetest.NewSigningKey(t, "b")
	trust := func(o *worker.Options) {
		o.Fetch.Signatures = fetcher.SignatureOptions{Trusted: signature.NewKeySet(keyA.Pub, keyB.Pub), JKU: fetcher.JKUOff}
	}
	plain := func(*testing.T) string { return diffCard }
	signedA := func(t *testing.T) string { return keyA.Sign(t, diffCard) }
	card := func(old, new string) func(*testing.T) string {
		return func(*testing.T) string { return strings.Replace(diffCard, old, new, 1) }
	}
	noStream := card(`"streaming":true`, `"streaming":false`)

	histories := []diffHistory{
		{name: "new signer", pinned: signedA, live: []func(*testing.T) string{
			func(t *testing.T) string { return keyB.Sign(t, diffCard) },
		}, want: detector.Continue, wantRule: detector.RuleSignerChanged},
		{name: "tampered card", pinned: signedA, live: []func(*testing.T) string{
			func(t *testing.T) string {
				return strings.Replace(keyA.Sign(t, diffCard), `"streaming":true`, `"streaming":false`, 1)
			},
		}, want: detector.Abort, wantRule: detector.RuleSignatureInvalid},
		{name: "require signed cards", requireSigned: true, pinned: plain, live: []func(*testing.T) string{plain},
			want: detector.Abort, wantRule: detector.RuleSignatureRequired},
		{name: "split brain", pinned: plain, live: []func(*testing.T) string{noStream, plain, noStream, plain, noStream},
			want: detector.Abort, wantRule: detector.RuleReplicasDisagree,
			impactBlind: detector.RuleReplicasDisagree, impactBlindWhy: "impact judges a proposed card, which no replica serves yet: it has no split-brain window"},
		{name: "pin by unknown digest", pinned: plain, unknownDigest: true,
			want: detector.Abort, wantRule: detector.RulePinnedCardUnknown},
		{name: "renamed skill", pinned: plain, live: []func(*testing.T) string{card(`"id":"summarize"`, `"id":"condense"`)},
			want: detector.Abort, wantRule: detector.RuleSkillRenamed},
		{name: "renamed skill, degrade", pinned: plain, live: []func(*testing.T) string{card(`"id":"summarize"`, `"id":"condense"`)},
			degrade: true, want: detector.Replan, wantRule: detector.RuleSkillRenamed, wantReplan: "condense"},
		{name: "removed skill", pinned: plain, live: []func(*testing.T) string{
			card(`"skills":[{"id":"summarize","name":"Summarize","description":"Summarizes text","tags":["text"]}]`, `"skills":[]`),
		}, want: detector.Abort, wantRule: detector.RuleSkillRemoved},
		{name: "unreachable agent", pinned: plain, unreachable: true},
	}

	rigs := map[bool]*servicetest.Rig{}
	rigOf := func(requireSigned bool) *servicetest.Rig {
		if r, ok := rigs[requireSigned]; ok {
			return r
		}
		r := servicetest.Start(t, servicetest.Options{Workers: []string{"w"}, Worker: func(o *worker.Options) {
			trust(o)
			o.RequireSignedCards = requireSigned
		}})
		rigs[requireSigned] = r
		return r
	}
	ctx := context.Background()

	for i, h := range histories {
		t.Run(h.name, func(t *testing.T) {
			r := rigOf(h.requireSigned)
			taskID := fmt.Sprintf("diff-%d", i)
			served := h.pinned(t)
			agent := servicetest.NewAgent(t, served)
			sub := events.Submitted{TaskID: taskID, AgentURL: agent.URL(), SkillID: "summarize", Requires: events.Requires{Streaming: true}}
			if h.degrade {
				sub.Posture, sub.Idempotent = detector.Degrade, true
			}
			if h.unknownDigest {
				sub.CardDigest = digestOf(t, agent.Served(card(`"version":"1.0.0"`, `"version":"0.9.0"`)(t)))
			}
			must(t, r.Emit.Submitted(ctx, sub))
			out := r.Out()
			out.WaitFor(t, "the pin", func(c *servicetest.Collector) bool { return len(c.Events(events.TypePinned, taskID)) == 1 })
			for _, live := range h.live {
				served = live(t)
				agent.Set(served)
				before := agent.Requests()
				must(t, r.Emit.Request(ctx, events.Request{TaskID: taskID, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}))
				r.Eventually("the transition's fetch", func() bool { return agent.Requests() > before })
				r.Drained(t, servicetest.WaitTimeout)
			}
			if h.unknownDigest {
				out.WaitFor(t, "the verdict on the client digest", func(c *servicetest.Collector) bool { return len(c.Drifts(taskID)) == 1 })
			}

			fo := r.WorkerOptions("planner", nil).Fetch
			fo.Leases, fo.Cards = r.Stores.Leases, r.Stores.Cards
			checker, err := planner.NewChecker(planner.CheckerOptions{Fetch: fo, RequireSigned: h.requireSigned})
			must(t, err)
			defer checker.Close()
			req := sub.Requirements()
			pin, _, err := r.Stores.Pins.Get(ctx, taskID)
			must(t, err)

			if h.unreachable {
				agent.SetStatus(503)
				must(t, r.Emit.Request(ctx, events.Request{TaskID: taskID, AgentURL: agent.URL(), Method: "message/stream", Attempt: 1}))
				out.WaitFor(t, "card.unreachable", func(c *servicetest.Collector) bool { return len(c.Unreachable(taskID)) == 1 })
				worker := out.Unreachable(taskID)[0]
				// The planner: no verdict, the same reason.
				_, err := checker.Check(ctx, req, agent.URL(), planner.WithPinnedDigest(pin.Digest))
				var ue *planner.UnreachableError
				if !errors.As(err, &ue) || string(ue.Reason) != worker.Reason {
					t.Fatalf("planner: Check = %v, want an UnreachableError for %q as the worker's card.unreachable", err, worker.Reason)
				}
				// Replay and impact: no card.drift to re-judge, no card to
				// propose (impact never fetches).
				judged, _, err := replayReader(t, r).Rejudge(ctx, replay.Query{TaskID: taskID}, replay.Reevaluation{})
				must(t, err)
				if len(judged) != 0 || len(out.Drifts(taskID)) != 0 {
					t.Fatalf("an unreachable agent was judged: replay %d, worker %d card.drift", len(judged), len(out.Drifts(taskID)))
				}
				return
			}

			// replay --reevaluate: every recorded verdict of the task (a
			// history may have made several: the split brain's first one
			// before its replicas were seen to disagree), re-judged. What
			// replay read is in the stream; the worker's card.drift are
			// those the collector received of it.
			judged, skipped, err := replayReader(t, r).Rejudge(ctx, replay.Query{TaskID: taskID}, replay.Reevaluation{})
			must(t, err)
			out.WaitFor(t, "the card.drift replay read", func(c *servicetest.Collector) bool {
				return len(c.Events(events.TypeDrift, taskID)) >= len(judged)
			})
			drifts := out.Events(events.TypeDrift, taskID)
			if len(drifts) == 0 {
				t.Fatal("the worker published no card.drift")
			}
			if len(judged) != len(drifts) || len(skipped) != 0 {
				t.Fatalf("replay re-judged %d of the worker's %d card.drift (skipped: %+v)", len(judged), len(drifts), skipped)
			}
			for _, e := range drifts {
				i := slices.IndexFunc(judged, func(j replay.Rejudged) bool { return j.EventID == e.ID })
				if i < 0 {
					t.Fatalf("replay did not re-judge card.drift %s", e.ID)
				}
				d := e.Data.(events.Drift)
				if w, rj := normalise("worker", d.Verdict, d.Findings), normalise("replay", judged[i].Verdict, judged[i].Findings); !rj.same(w) {
					t.Errorf("the doors disagree on card.drift %s:\n  %v\n  %v", e.ID, w, rj)
				}
			}

			// The worker: its last card.drift, the task's verdict now.
			last := drifts[len(drifts)-1]
			wd := last.Data.(events.Drift)
			doors := []verdictOf{normalise("worker", wd.Verdict, wd.Findings)}
			if wd.Verdict.Action != h.want || !slices.Contains(detector.RuleIDs(wd.Findings), h.wantRule) || wd.Verdict.ReplanSkill != h.wantReplan {
				t.Fatalf("worker: %v, want %s with %s (replan onto %q): not the history meant", doors[0], h.want, h.wantRule, h.wantReplan)
			}

			// The planner's Checker, with the task's pinned card.
			dec, err := checker.Check(ctx, req, agent.URL(), planner.WithPinnedDigest(pin.Digest))
			switch {
			case h.unknownDigest:
				// Documented: a digest whose body nobody stored names no
				// card the planner can be told about.
				if !errors.Is(err, planner.ErrUnknownPinned) {
					t.Fatalf("planner: Check(unknown digest) = %v, want ErrUnknownPinned", err)
				}
			case err != nil:
				t.Fatalf("planner: Check = %v", err)
			default:
				doors = append(doors, normalise("planner", *dec.Verdict, dec.Findings))
			}

			for _, d := range doors[1:] {
				if !d.same(doors[0]) {
					t.Errorf("the doors disagree:\n  %v\n  %v", doors[0], d)
				}
			}

			// carddrift impact: the live card proposed against the stored
			// pins, its signatures verified as the worker verifies it.
			raw := agent.Served(served)
			f, err := fetcher.New(fo)
			must(t, err)
			defer f.Close()
			rep, err := impact.Assess(ctx, impact.Source{Pins: r.Stores.Pins, Cards: r.Stores.Cards}, agent.URL(), raw,
				impact.Options{RequireSigned: h.requireSigned, Signatures: f.VerifyAt(ctx, wd.CardURL, raw)})
			must(t, err)
			j := slices.IndexFunc(rep.Tasks, func(x impact.Task) bool { return x.TaskID == taskID })
			if j < 0 {
				t.Fatalf("impact: no task %s in %+v", taskID, rep.Tasks)
			}
			it := rep.Tasks[j]
			iv := verdictOf{door: "impact", action: it.Action, posture: it.Posture, reason: it.Reason, replan: it.ReplanSkill, findings: []findingOf{}}
			for _, f := range it.Findings {
				iv.findings = append(iv.findings, findingOf{rule: f.Rule, severity: f.Severity, touches: f.Touches})
			}
			if want := doors[0].asImpactSees(h.impactBlind); !iv.same(want) {
				t.Errorf("the doors disagree (impact blind to %q: %s):\n  %v\n  %v", h.impactBlind, h.impactBlindWhy, want, iv)
			}
		})
	}
}

func digestOf(t *testing.T, raw []byte) string {
	t.Helper()
	d, err := detector.Digest(raw)
	must(t, err)
	return d
}

func replayReader(t *testing.T, r *servicetest.Rig) *replay.Reader {
	t.Helper()
	rd, err := replay.New(r.JS, replay.Options{Config: r.Config, Cards: r.Stores.Cards, IdleTimeout: 5 * time.Second})
	must(t, err)
	return rd
}
