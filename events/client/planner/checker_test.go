package planner_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/fetcher"
	"github.com/carddrift/carddrift/store/memstore"
	"github.com/carddrift/carddrift/store/natstest"
)

func kinds(us []detector.Unmet) []detector.UnmetKind {
	var out []detector.UnmetKind
	for _, u := range us {
		out = append(out, u.Kind)
	}
	return out
}

func TestUnsatisfied(t *testing.T) {
	secured := cardSpec{Skills: []skillSpec{{ID: "echo"}}, Schemes: []string{"bearer", "oauth"}, Security: []string{"oauth"}}
	cases := []struct {
		name string
		card cardSpec
		req  detector.Requirements
		want []detector.UnmetKind
	}{
		{"satisfied", v1, detector.Requirements{SkillID: "echo", Streaming: true, InputModes: []string{"text/plain"}}, nil},
		{"no requirements", v1, detector.Requirements{}, nil},
		{"skill gone", v1, detector.Requirements{SkillID: "summarize"}, []detector.UnmetKind{detector.UnmetSkill}},
		{"streaming off", noStream, streamEcho, []detector.UnmetKind{detector.UnmetStreaming}},
		{"push off", v1, detector.Requirements{PushNotifications: true}, []detector.UnmetKind{detector.UnmetPushNotifications}},
		{"input mode", v1, detector.Requirements{SkillID: "echo", InputModes: []string{"image/png", "text/plain"}}, []detector.UnmetKind{detector.UnmetInputMode}},
		{"output mode of the skill", narrowedTr, detector.Requirements{SkillID: "translate", OutputModes: []string{"text/plain"}}, []detector.UnmetKind{detector.UnmetOutputMode}},
		{"output mode wildcard covers", cardSpec{OutputModes: []string{"image/*"}}, detector.Requirements{OutputModes: []string{"image/png"}}, nil},
		{"no modes declared constrain nothing", cardSpec{InputModes: []string{}, OutputModes: []string{}}, detector.Requirements{InputModes: []string{"x/y"}}, nil},
		{"scheme present and required", secured, detector.Requirements{SkillID: "echo", Security: []string{"OAuth"}}, nil},
		{"scheme missing", secured, detector.Requirements{SkillID: "echo", Security: []string{"apikey"}},
			[]detector.UnmetKind{detector.UnmetSecurityScheme, detector.UnmetSecurityRequirements}},
		{"scheme present but not the required one", secured, detector.Requirements{SkillID: "echo", Security: []string{"bearer"}},
			[]detector.UnmetKind{detector.UnmetSecurityRequirements}},
		{"everything", noStream, detector.Requirements{SkillID: "gone", Streaming: true, PushNotifications: true, Security: []string{"bearer"}},
			[]detector.UnmetKind{detector.UnmetSkill, detector.UnmetStreaming, detector.UnmetPushNotifications, detector.UnmetSecurityScheme}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := detector.Unsatisfied(c.card.Card(t), c.req)
			if !slices.Equal(kinds(got), c.want) {
				t.Errorf("Unsatisfied = %v, want %v", got, c.want)
			}
			for _, u := range got {
				if u.Value == "" || u.Message == "" {
					t.Errorf("unmet %+v lacks a value or message", u)
				}
			}
		})
	}
	if got := detector.Unsatisfied(nil, streamEcho); got != nil {
		t.Errorf("Unsatisfied(nil) = %v, want nil", got)
	}
}

func hasRule(fs []detector.Finding, rule string) bool {
	return slices.ContainsFunc(fs, func(f detector.Finding) bool { return f.Rule == rule })
}

func newChecker(t *testing.T, opts planner.CheckerOptions) *planner.Checker {
	t.Helper()
	c, err := planner.NewChecker(opts)
	if err != nil {
		t.Fatalf("NewChecker: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		c.Close() // safe twice
	})
	return c
}

func check(t *testing.T, c *planner.Checker, req detector.Requirements, agentURL string, opts ...planner.CheckOption) planner.Decision {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := c.Check(ctx, req, agentURL, opts...)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return d
}

func TestCheckLiveCard(t *testing.T) {
	a := servicetest.NewAgent(t, v1.String())
	c := newChecker(t, planner.CheckerOptions{Fetch: servicetest.LoopbackFetch()})

	d := check(t, c, streamEcho, a.URL())
	if !d.OK() || !d.Satisfied() || d.Verdict != nil || d.Pinned != nil {
		t.Fatalf("decision = %+v, want OK without verdict", d)
	}
	if d.Live.Digest != digest(t, v1.JSON()) || d.CardURL != a.URL()+fetcher.WellKnownPath || string(d.Card.Raw) != string(v1.JSON()) {
		t.Errorf("live = %+v card url %s, want v1 from the well-known URL", d.Live, d.CardURL)
	}

	a.Set(noStream.String())
	d = check(t, c, streamEcho, a.URL())
	if d.OK() || !slices.Equal(kinds(d.Unmet), []detector.UnmetKind{detector.UnmetStreaming}) {
		t.Errorf("after streaming was disabled: OK %v unmet %v, want streaming-not-supported", d.OK(), d.Unmet)
	}
}

func TestCheckAgainstPinned(t *testing.T) {
	a := servicetest.NewAgent(t, noStream.String())
	cards := memstore.NewCards()
	raw := v1.JSON()
	if err := cards.Put(context.Background(), digest(t, raw), raw); err != nil {
		t.Fatal(err)
	}
	c := newChecker(t, planner.CheckerOptions{Fetch: servicetest.LoopbackFetch(), Cards: cards})
	for name, opt := range map[string]planner.CheckOption{
		"raw":    planner.WithPinned(raw),
		"card":   planner.WithPinnedCard(v1.Card(t)),
		"digest": planner.WithPinnedDigest(digest(t, raw)),
	} {
		t.Run(name, func(t *testing.T) {
			d := check(t, c, streamEcho, a.URL(), opt)
			if d.Verdict == nil || d.Verdict.Action != detector.Abort || d.OK() {
				t.Fatalf("verdict = %+v, want abort", d.Verdict)
			}
			if d.Pinned == nil || d.Pinned.Digest != digest(t, raw) || d.Pinned.Fingerprint == d.Live.Fingerprint {
				t.Errorf("pinned = %+v live %+v", d.Pinned, d.Live)
			}
			if !hasRule(d.Findings, detector.RuleStreamingDisabled) {
				t.Errorf("findings = %+v, want streaming-disabled", d.Findings)
			}
		})
	}
	// The same drift under degrade, idempotent: re-plan.
	d := check(t, c, streamEcho, a.URL(), planner.WithPinned(raw), planner.WithPosture(detector.Degrade))
	if d.Verdict.Action != detector.Abort {
		t.Errorf("degrade without idempotent = %s, want abort", d.Verdict.Action)
	}
	req := streamEcho
	req.Posture, req.Idempotent = detector.Degrade, true
	if d := check(t, c, req, a.URL(), planner.WithPinned(raw)); d.Verdict.Action != detector.Replan {
		t.Errorf("degrade, idempotent = %s, want replan", d.Verdict.Action)
	}
	// Pinned equal to live: continue, no findings.
	a.Set(string(raw))
	if d := check(t, c, streamEcho, a.URL(), planner.WithPinned(raw)); !d.OK() || d.Verdict.Action != detector.Continue || len(d.Findings) != 0 {
		t.Errorf("unchanged card: verdict %+v findings %v, want continue, none", d.Verdict, d.Findings)
	}
}

func TestCheckPinnedErrors(t *testing.T) {
	a := servicetest.NewAgent(t, v1.String())
	ctx := context.Background()
	withCards := newChecker(t, planner.CheckerOptions{Fetch: servicetest.LoopbackFetch(), Cards: memstore.NewCards()})
	without := newChecker(t, planner.CheckerOptions{Fetch: servicetest.LoopbackFetch()})
	cases := []struct {
		name string
		c    *planner.Checker
		opt  planner.CheckOption
		want error
	}{
		{"not a card", withCards, planner.WithPinned([]byte(`{"nope":`)), planner.ErrInvalidPinned},
		{"unknown digest", withCards, planner.WithPinnedDigest("sha256:0000000000000000000000000000000000000000000000000000000000000000"), planner.ErrUnknownPinned},
		{"malformed digest", withCards, planner.WithPinnedDigest("md5:x"), planner.ErrUnknownPinned},
		{"no card store", without, planner.WithPinnedDigest(digest(t, v1.JSON())), planner.ErrUnknownPinned},
	}
	for _, c := range cases {
		if _, err := c.c.Check(ctx, streamEcho, a.URL(), c.opt); !errors.Is(err, c.want) {
			t.Errorf("%s: Check = %v, want %v", c.name, err, c.want)
		}
	}
	if n := a.Requests(); n != 0 {
		t.Errorf("a bad pinned card still fetched the live card (%d requests)", n)
	}
}

// An unreachable card is a typed error, never a satisfied decision.
func TestCheckUnreachable(t *testing.T) {
	a := servicetest.NewAgent(t, v1.String())
	ctx := context.Background()
	c := newChecker(t, planner.CheckerOptions{Fetch: servicetest.LoopbackFetch()})

	a.SetStatus(http.StatusInternalServerError)
	_, err := c.Check(ctx, streamEcho, a.URL())
	var ue *planner.UnreachableError
	if !errors.As(err, &ue) || !errors.Is(err, planner.ErrUnreachable) || !errors.Is(err, fetcher.ReasonStatus) {
		t.Fatalf("500: Check = %v, want *UnreachableError matching ErrUnreachable and fetcher.ReasonStatus", err)
	}
	if ue.Reason != fetcher.ReasonStatus || ue.Status != http.StatusInternalServerError || ue.AgentURL != a.URL() || ue.CardURL == "" {
		t.Errorf("unreachable = %+v", ue)
	}

	// A failure is shared for the agent's backoff, like a success for its
	// lease: another agent shows the next kind of failure.
	b := servicetest.NewAgent(t, v1.String())
	b.Set(`{"name": "x", "name": "y"}`)
	if _, err := c.Check(ctx, streamEcho, b.URL()); !errors.Is(err, fetcher.ReasonDuplicateKeys) || !errors.Is(err, planner.ErrUnreachable) {
		t.Errorf("duplicate keys: Check = %v, want unreachable, duplicate-keys", err)
	}

	// The SSRF guard of the workers applies: loopback is refused by default.
	guarded := newChecker(t, planner.CheckerOptions{})
	if _, err := guarded.Check(ctx, streamEcho, a.URL()); !errors.As(err, &ue) || ue.Reason != fetcher.ReasonRefusedAddress {
		t.Errorf("guarded: Check = %v, want refused-address", err)
	}
	if _, err := c.Check(ctx, streamEcho, "ftp://agent.example"); !errors.As(err, &ue) || ue.Reason != fetcher.ReasonInvalidURL {
		t.Errorf("bad URL: Check = %v, want invalid-url", err)
	}
}

// A check inside a fresh lease costs no request; WithForce always fetches.
func TestCheckSharesLease(t *testing.T) {
	a := servicetest.NewAgent(t, v1.String())
	a.SetCacheControl("max-age=60")
	leases, cards := memstore.NewLeases(), memstore.NewCards()
	opts := servicetest.LoopbackFetch()
	opts.MinLease, opts.Leases, opts.Cards = time.Second, leases, cards
	first := newChecker(t, planner.CheckerOptions{Fetch: opts})
	second := newChecker(t, planner.CheckerOptions{Fetch: opts}) // another process, same stores

	if d := check(t, first, streamEcho, a.URL()); d.FromLease {
		t.Error("first check came from a lease")
	}
	if d := check(t, second, streamEcho, a.URL()); !d.FromLease || d.Card == nil {
		t.Errorf("second check: FromLease %v card %v, want the shared lease's card", d.FromLease, d.Card != nil)
	}
	if n := a.Requests(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	a.Set(noStream.String())
	if d := check(t, second, streamEcho, a.URL(), planner.WithForce()); d.FromLease || d.Satisfied() {
		t.Errorf("forced check: FromLease %v satisfied %v, want a fetch of the new card", d.FromLease, d.Satisfied())
	}
}

func TestNewCheckerInvalid(t *testing.T) {
	_, err := planner.NewChecker(planner.CheckerOptions{Fetch: fetcher.Options{MaxBodyBytes: -1}})
	if !errors.Is(err, planner.ErrInvalidOptions) {
		t.Errorf("NewChecker = %v, want ErrInvalidOptions", err)
	}
	// A shared fetcher is not closed by the Checker.
	f, err := fetcher.New(servicetest.LoopbackFetch())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := newChecker(t, planner.CheckerOptions{Fetcher: f})
	c.Close()
	a := servicetest.NewAgent(t, v1.String())
	if _, err := f.Observe(context.Background(), a.URL()+fetcher.WellKnownPath, false); err != nil {
		t.Errorf("shared fetcher closed by Checker.Close: %v", err)
	}
}

// renamedEcho is v1 with skill echo offered as echo-v2 (the same modes, tags
// and security requirements).
var renamedEcho = cardSpec{Streaming: true, Skills: []skillSpec{{ID: "echo-v2"}, {ID: "translate"}}}

// TestCheckRenamedSkill: the Checker tells a degrade, idempotent task whose
// skill was renamed to re-plan onto the new id; a fail-closed one aborts
// and is told no skill to move to.
func TestCheckRenamedSkill(t *testing.T) {
	a := servicetest.NewAgent(t, renamedEcho.String())
	c := newChecker(t, planner.CheckerOptions{Fetch: servicetest.LoopbackFetch()})
	degrade := detector.Requirements{SkillID: "echo", Posture: detector.Degrade, Idempotent: true}

	d := check(t, c, degrade, a.URL(), planner.WithPinned(v1.JSON()))
	if d.Verdict == nil || d.Verdict.Action != detector.Replan || d.Verdict.ReplanSkill != "echo-v2" {
		t.Fatalf("verdict = %+v, want replan onto echo-v2", d.Verdict)
	}
	if !hasRule(d.Findings, detector.RuleSkillRenamed) || hasRule(d.Findings, detector.RuleSkillRemoved) {
		t.Errorf("findings = %+v, want skill-renamed and no skill-removed", d.Findings)
	}
	if !slices.Equal(kinds(d.Unmet), []detector.UnmetKind{detector.UnmetSkill}) {
		t.Errorf("unmet = %v, want the old id gone", d.Unmet)
	}

	d = check(t, c, degrade, a.URL(), planner.WithPinned(v1.JSON()), planner.WithPosture(detector.FailClosed))
	if d.Verdict.Action != detector.Abort || d.Verdict.ReplanSkill != "" {
		t.Errorf("fail-closed verdict = %+v, want abort without a replan skill", d.Verdict)
	}
}

// TestSubscribeReplanSkill: Subscribe hands the planner the card.drift's
// replanSkill.
func TestSubscribeReplanSkill(t *testing.T) {
	js, _ := withJS(t)
	rec := &recorder{}
	subscribe(t, js, planner.Options{Durable: "replan"}, rec.handle)
	degrade := detector.Requirements{SkillID: "echo", Posture: detector.Degrade, Idempotent: true}
	publish(t, js, drift(t, "task-1", "https://a.example", v1, renamedEcho, degrade),
		drift(t, "task-2", "https://a.example", v1, noStream, streamEcho))
	natstest.Eventually(t, 10*time.Second, "verdicts", func() bool { return rec.len() == 2 })
	for _, v := range rec.got {
		want := ""
		if v.TaskID == "task-1" {
			want = "echo-v2"
		}
		if v.ReplanSkill != want {
			t.Errorf("%s: ReplanSkill = %q (%s: %s), want %q", v.TaskID, v.ReplanSkill, v.Action, v.Reason, want)
		}
	}
}

// TestSubscribeUsesTouches: the impact comes from the touches the card.drift
// carries, before any store: a pin whose requirements would say otherwise is
// not read. Touches that contradict the action are not trusted, and a
// card.drift without touches (written before contract v1.1) falls back to
// the implied impact.
func TestSubscribeUsesTouches(t *testing.T) {
	js, _ := withJS(t)
	ctx := context.Background()
	a := "https://a.example"

	// The stores hold a pin of "streams" that does not stream: recomputing
	// from them would find no impact.
	pins, cards := memstore.NewPins[task.Pin](), memstore.NewCards()
	for _, c := range []cardSpec{v1, noStream, narrowedTr} {
		raw := c.JSON()
		if err := cards.Put(ctx, digest(t, raw), raw); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pins.Create(ctx, task.Pin{TaskID: "streams", AgentURL: a, Digest: digest(t, v1.JSON()),
		Requirements: detector.Requirements{SkillID: "echo", Posture: detector.FailClosed}}); err != nil {
		t.Fatal(err)
	}

	streams := drift(t, "streams", a, v1, noStream, streamEcho)
	contradicts := drift(t, "contradicts", a, v1, noStream, streamEcho)
	for i := range contradicts.Findings {
		contradicts.Findings[i].Touches = false // abort, yet nothing touches
	}
	legacyWarn := drift(t, "legacy-warning", a, v1, narrowedTr, streamEcho)

	all := &recorder{}
	subscribe(t, js, planner.Options{Durable: "touches", Pins: pins, Cards: cards}, all.handle)
	warn := &recorder{}
	subscribe(t, js, planner.Options{Durable: "touches-warning", MinSeverity: detector.Warning}, warn.handle)
	publish(t, js, streams, contradicts)
	publishLegacy(t, js, legacyWarn)
	natstest.Eventually(t, 10*time.Second, "three verdicts to each, durables idle", func() bool {
		return all.len() == 3 && warn.len() == 3 && consumerIdle(t, js, "touches") && consumerIdle(t, js, "touches-warning")
	})

	byTask := map[string]planner.Verdict{}
	for _, v := range all.got {
		byTask[v.TaskID] = v
	}
	if v := byTask["streams"]; !v.ImpactExact || v.Impact != detector.Breaking || len(v.Impacting) != 1 || v.Impacting[0].Rule != detector.RuleStreamingDisabled {
		t.Errorf("streams: exact %v impact %v impacting %v, want exact breaking streaming-disabled from the event's touches", v.ImpactExact, v.Impact, v.Impacting)
	}
	if v := byTask["contradicts"]; v.ImpactExact || v.Impact != detector.Breaking {
		t.Errorf("contradicts: exact %v impact %v, want the implied breaking impact of an abort", v.ImpactExact, v.Impact)
	}
	if v := byTask["legacy-warning"]; v.ImpactExact || v.Impact != detector.Warning {
		t.Errorf("legacy-warning: exact %v impact %v, want the implied warning (no pin in the stores)", v.ImpactExact, v.Impact)
	}
	// Without stores, MinSeverity warning keeps what may reach it: the
	// legacy continue with a breaking finding elsewhere is delivered.
	got := warn.tasks()
	slices.Sort(got)
	if want := []string{"contradicts", "legacy-warning", "streams"}; !slices.Equal(got, want) {
		t.Errorf("MinSeverity warning delivered %v, want %v", got, want)
	}
}
