package planner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/store/fetcher"
)

// extSecret is the credential every Decision and error is searched for.
const extSecret = "tok-3b7e90d1-planner-extended-secret"

// extendedAgent is a v1.0 JSON-RPC agent whose public card offers the
// extended card; GetExtendedAgentCard answers only to "Bearer extSecret"
// (else 401), and, with echo set, answers a JSON-RPC error that repeats the
// Authorization it was sent, as careless servers do. Nothing is cached.
type extendedAgent struct {
	srv *httptest.Server

	mu       sync.Mutex
	token    string
	echo     bool
	skills   []string // of the extended card
	authSeen []string // path and Authorization of every request
}

func newExtendedAgent(t *testing.T) *extendedAgent {
	a := &extendedAgent{token: "Bearer " + extSecret, skills: []string{"summarize", "audit-ledger"}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *extendedAgent) card(skills ...string) []byte {
	var s []string
	for _, id := range skills {
		s = append(s, fmt.Sprintf(`{"id":%q,"name":%q,"description":"d","tags":["t"]}`, id, id))
	}
	return fmt.Appendf(nil, `{"name":"Ledger","description":"ledger agent","version":"1.0.0",`+
		`"supportedInterfaces":[{"url":"%s/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
		`"capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[%s]}`,
		a.srv.URL, strings.Join(s, ","))
}

func (a *extendedAgent) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	auth := r.Header.Get("Authorization")
	a.authSeen = append(a.authSeen, r.URL.Path+" "+auth)
	w.Header().Set("Cache-Control", "no-cache")
	switch r.URL.Path {
	case fetcher.WellKnownPath:
		_, _ = w.Write(a.card("summarize"))
	case "/a2a":
		body, _ := io.ReadAll(r.Body)
		var rpc struct{ Method string }
		_ = json.Unmarshal(body, &rpc)
		switch {
		case rpc.Method != "GetExtendedAgentCard":
			http.Error(w, "no", http.StatusBadRequest)
		case a.echo:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":%q}}`, "credential "+auth+" is not accepted")
		case auth != a.token:
			http.Error(w, "token "+auth+" not accepted", http.StatusUnauthorized)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, a.card(a.skills...))
		}
	default:
		http.NotFound(w, r)
	}
}

func (a *extendedAgent) set(fn func(a *extendedAgent)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fn(a)
}

// TestCheckExtendedCard: a Checker given credentials judges a task that uses
// the extended card against the extended card, as a worker does (a skill
// removed from the extended card only is drift); a Checker without
// credentials for the agent judges it on the public card, extended
// "unavailable", with no drift while the public card is unchanged (before,
// the planner's extended card was diffed against the public card: a false
// skill-removed abort). A refused credential is an *UnreachableError. The
// secret is in no Decision and no error.
func TestCheckExtendedCard(t *testing.T) {
	a := newExtendedAgent(t)
	creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": "Bearer %s"}}}`, a.srv.URL, extSecret), nil)
	if err != nil {
		t.Fatal(err)
	}
	withCreds := servicetest.LoopbackFetch()
	withCreds.Credentials = creds
	authed := newChecker(t, planner.CheckerOptions{Fetch: withCreds})
	bare := newChecker(t, planner.CheckerOptions{Fetch: servicetest.LoopbackFetch()})

	planned := a.card("summarize", "audit-ledger") // the extended card the planner planned on
	pubDigest, extDigest := digest(t, a.card("summarize")), digest(t, planned)
	req := detector.Requirements{SkillID: "audit-ledger", ExtendedCard: true}

	var out strings.Builder // every Decision and error, searched for the secret last
	record := func(d planner.Decision, err error) {
		b, _ := json.Marshal(d)
		out.Write(b)
		fmt.Fprintf(&out, "%v %+v %#v\n", d, d, d)
		if err != nil {
			fmt.Fprintf(&out, "%v %+v %#v %s\n", err, err, err, err.Error())
			if ue := (*planner.UnreachableError)(nil); errors.As(err, &ue) {
				fmt.Fprintf(&out, "%+v %#v\n", *ue, *ue)
			}
		}
	}
	checkRecorded := func(c *planner.Checker, opts ...planner.CheckOption) (planner.Decision, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := c.Check(ctx, req, a.srv.URL, opts...)
		record(d, err)
		return d, err
	}

	type want struct {
		extended string
		live     string
		action   detector.Action
		rules    []string
		unmet    []detector.UnmetKind
	}
	judge := func(name string, c *planner.Checker, w want) {
		t.Helper()
		d, err := checkRecorded(c, planner.WithPinned(planned))
		if err != nil {
			t.Fatalf("%s: Check: %v", name, err)
		}
		var rules []string
		for _, f := range d.Findings {
			rules = append(rules, f.Rule)
		}
		if d.Extended != w.extended || d.Live.Digest != w.live || d.Verdict == nil || d.Verdict.Action != w.action ||
			!slices.Equal(rules, w.rules) || !slices.Equal(kinds(d.Unmet), w.unmet) {
			t.Errorf("%s: Check = extended %q live %s verdict %+v rules %v unmet %v,\n\twant extended %q live %s action %s rules %v unmet %v",
				name, d.Extended, d.Live.Digest, d.Verdict, rules, kinds(d.Unmet), w.extended, w.live, w.action, w.rules, w.unmet)
		}
		if d.Pinned == nil || d.Pinned.Digest != extDigest {
			t.Errorf("%s: Pinned = %+v, want the planner's card %s", name, d.Pinned, extDigest)
		}
	}
	// The public card never offers audit-ledger: without credentials it says
	// so (Unmet), and nothing else.
	publicUnmet := []detector.UnmetKind{detector.UnmetSkill}

	judge("with credentials, unchanged", authed, want{events.ExtendedPinned, extDigest, detector.Continue, nil, nil})
	judge("without credentials, unchanged", bare, want{events.ExtendedUnavailable, pubDigest, detector.Continue, nil, publicUnmet})
	if d, err := checkRecorded(authed); err != nil || d.Extended != events.ExtendedPinned || !d.OK() || !fetcher.IsExtendedKey(d.CardURL) {
		t.Errorf("with credentials, no pinned card: %+v, %v; want the extended card, satisfied", d, err)
	}

	// The vendor withdraws audit-ledger from the extended card only.
	a.set(func(a *extendedAgent) { a.skills = []string{"summarize"} })
	judge("with credentials, skill withdrawn", authed,
		want{events.ExtendedPinned, pubDigest, detector.Abort, []string{detector.RuleSkillRemoved, detector.RuleContentChangedWithoutVersion}, publicUnmet})
	judge("without credentials, public card unchanged", bare,
		want{events.ExtendedUnavailable, pubDigest, detector.Continue, nil, publicUnmet})

	// The credential went to the extended card request only.
	a.mu.Lock()
	for _, s := range a.authSeen {
		if !strings.HasPrefix(s, "/a2a ") && strings.Contains(s, extSecret) {
			t.Errorf("a request other than the extended card's carried the credential: %s", s)
		}
	}
	a.mu.Unlock()

	// A refused credential, and one a JSON-RPC error repeats.
	for _, tc := range []struct {
		name   string
		set    func(a *extendedAgent)
		reason fetcher.Reason
	}{
		{"rotated", func(a *extendedAgent) { a.token = "Bearer rotated" }, fetcher.ReasonUnauthorized},
		{"echoed", func(a *extendedAgent) { a.echo = true }, fetcher.ReasonRPCError},
	} {
		a.set(tc.set)
		d, err := checkRecorded(authed, planner.WithPinned(planned))
		var ue *planner.UnreachableError
		if !errors.As(err, &ue) || !errors.Is(err, planner.ErrUnreachable) || ue.Reason != tc.reason || !fetcher.IsExtendedKey(ue.CardURL) {
			t.Errorf("%s: Check = %+v, %v; want an *UnreachableError %s for the extended card", tc.name, d, err, tc.reason)
		}
	}
	a.mu.Lock()
	echoed := slices.ContainsFunc(a.authSeen, func(s string) bool { return strings.Contains(s, extSecret) })
	a.mu.Unlock()
	if !echoed {
		t.Fatal("the agent was never sent the secret: the search below proves nothing")
	}

	// The secret is in no Decision and no error.
	if s := out.String(); len(s) < 2000 || !strings.Contains(s, "audit-ledger") || !strings.Contains(s, "rpc-error") {
		t.Fatalf("too little recorded to search (%d bytes)", len(s))
	} else if i := strings.Index(s, extSecret); i >= 0 {
		t.Errorf("the secret is in a Decision or an error: …%s…", s[max(i-200, 0):min(i+50, len(s))])
	}
}
