package census_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/inspect/impact"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

const extSecret = "tok-51e09f2c-fleet-extended-secret"

// ledger is a v1.0 JSON-RPC agent whose public card (1.0.0, summarize)
// offers an extended card (2.0.0, summarize and audit-ledger) to
// "Bearer extSecret" only, echoing a refused token in its 401.
type ledger struct {
	srv   *httptest.Server
	mu    sync.Mutex
	token string
}

func newLedger(t *testing.T) *ledger {
	l := &ledger{token: "Bearer " + extSecret}
	l.srv = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *ledger) card(version string, skills ...string) []byte {
	var s []string
	for _, id := range skills {
		s = append(s, fmt.Sprintf(`{"id":%q,"name":%q,"description":"d","tags":["t"]}`, id, id))
	}
	return fmt.Appendf(nil, `{"name":"Ledger","description":"ledger agent","version":%q,`+
		`"supportedInterfaces":[{"url":"%s/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
		`"capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[%s]}`,
		version, l.srv.URL, strings.Join(s, ","))
}

func (l *ledger) public() []byte   { return l.card("1.0.0", "summarize") }
func (l *ledger) extended() []byte { return l.card("2.0.0", "summarize", "audit-ledger") }

func (l *ledger) serve(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w.Header().Set("Cache-Control", "no-cache")
	switch r.URL.Path {
	case "/.well-known/agent-card.json":
		_, _ = w.Write(l.public())
	case "/a2a":
		_, _ = io.Copy(io.Discard, r.Body)
		if got := r.Header.Get("Authorization"); got != l.token {
			http.Error(w, "token "+got+" not accepted", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, l.extended())
	default:
		http.NotFound(w, r)
	}
}

// TestTakeExtended: the fleet view of agents with authenticated extended
// cards, taken from a worker's stores and card stream (with a Tally and
// without): the agent's live card is its public card, never the extended
// card its lease also holds; the extended card has its own digest, version
// and state (unreachable: unauthorized once the token is rotated); tasks
// per card version say which are pinned on the extended card and which use
// it but are judged on the public card (no credentials). The JSON of an
// agent without extended cards is the contract's, and no rendering — JSON,
// text, page — carries the secret.
func TestTakeExtended(t *testing.T) {
	a, bare := newLedger(t), newLedger(t)
	creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": "Bearer %s"}}}`, a.srv.URL, extSecret), nil)
	must(t, err)
	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}, Worker: func(o *worker.Options) { o.Fetch.Credentials = creds }})
	ctx := context.Background()
	extended := events.Requires{ExtendedCard: true}
	for _, s := range []events.Submitted{
		{TaskID: "ext1", AgentURL: a.srv.URL, SkillID: "audit-ledger", Requires: extended},
		{TaskID: "ext2", AgentURL: a.srv.URL, SkillID: "audit-ledger", Requires: extended},
		{TaskID: "plain", AgentURL: a.srv.URL, SkillID: "summarize"},
		{TaskID: "nocreds", AgentURL: bare.srv.URL, SkillID: "summarize", Requires: extended},
	} {
		must(t, r.Emit.Submitted(ctx, s))
		r.Eventually(s.TaskID+" pinned", func() bool { return len(r.Out().Events(events.TypePinned, s.TaskID)) == 1 })
	}
	// The vendor rotates the token: the extended card is refused.
	a.mu.Lock()
	a.token = "Bearer rotated"
	a.mu.Unlock()
	must(t, r.Emit.Request(ctx, events.Request{TaskID: "ext1", AgentURL: a.srv.URL, Method: "message/stream", Attempt: 1}))
	r.Eventually("card.unreachable", func() bool { return len(r.Out().Unreachable("ext1")) == 1 })
	r.Drained(t, servicetest.WaitTimeout)

	pubDigest, _ := detector.Digest(a.public())
	extDigest, _ := detector.Digest(a.extended())
	bareDigest, _ := detector.Digest(bare.public())
	impactOfExtended(t, ctx, impact.Source{Pins: r.Stores.Pins, Cards: r.Stores.Cards}, a.srv.URL, a.public(), a.extended())
	src := fresh(r.JS, r.Config, r.Stores, r.Stores.Cards)
	for _, name := range []string{"first census", "again"} {
		t.Run(name, func(t *testing.T) {
			f, err := census.Take(ctx, src, census.Options{})
			must(t, err)
			by := map[string]census.Agent{}
			for _, ag := range f.Agents {
				by[ag.AgentURL] = ag
			}
			ga, gb := by[a.srv.URL], by[bare.srv.URL]
			if ga.Digest != pubDigest || ga.Version != "1.0.0" || ga.UnreachableSince != nil {
				t.Errorf("agent a: live %s %s unreachable %v, want its public card %s 1.0.0, reachable", ga.Digest, ga.Version, ga.UnreachableSince, pubDigest)
			}
			if e := ga.Extended; e == nil || e.Digest != extDigest || e.Version != "2.0.0" || e.UnreachableSince == nil || e.Unreachable != string(fetcher.ReasonUnauthorized) {
				t.Errorf("agent a: extended %+v, want %s 2.0.0 unreachable (unauthorized)", e, extDigest)
			}
			wantA := []census.CardTasks{
				{Digest: extDigest, Version: "2.0.0", Count: 2, Live: true, Extended: events.ExtendedPinned},
				{Digest: pubDigest, Version: "1.0.0", Count: 1, Live: true},
			}
			wantB := []census.CardTasks{{Digest: bareDigest, Version: "1.0.0", Count: 1, Live: true, Extended: events.ExtendedUnavailable}}
			if !sameTasks(ga.Tasks, wantA) || !sameTasks(gb.Tasks, wantB) || gb.Extended != nil {
				t.Errorf("tasks: a %+v, b %+v (extended %+v); want a %+v, b %+v", ga.Tasks, gb.Tasks, gb.Extended, wantA, wantB)
			}
			if p, u := ga.ExtendedTasks(); p != 2 || u != 0 {
				t.Errorf("agent a: %d pinned on the extended card, %d unavailable", p, u)
			}

			var js, text, page bytes.Buffer
			must(t, f.WriteJSON(&js))
			must(t, f.WriteText(&text))
			must(t, f.WriteHTML(&page, 0))
			var doc struct {
				Agents []map[string]json.RawMessage `json:"agents"`
			}
			must(t, json.Unmarshal(js.Bytes(), &doc))
			for _, ag := range doc.Agents {
				_, has := ag["extended"]
				if want := string(ag["agentUrl"]) == fmt.Sprintf("%q", a.srv.URL); has != want || len(ag) != 7+boolInt(has) {
					t.Errorf("agent JSON %s: %d members, extended %v", ag["agentUrl"], len(ag), has)
				}
			}
			for _, want := range []string{"authenticated extended cards", "2 on live extended, 1 on live",
				"1 extended unavailable, on live", "unreachable since", "(unauthorized)"} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("text lacks %q:\n%s", want, text.String())
				}
			}
			for _, want := range []string{"<h2>authenticated extended cards</h2>", "2 task(s) on live extended", "(unauthorized)"} {
				if !strings.Contains(page.String(), want) {
					t.Errorf("page lacks %q", want)
				}
			}
			for what, out := range map[string]string{"json": js.String(), "text": text.String(), "html": page.String()} {
				if strings.Contains(out, extSecret) {
					t.Errorf("the secret is in the fleet %s", what)
				}
			}
		})
	}
}

// TestTakeExtended's pins, as the worker made them, through impact: a
// proposed public card judges the public pin and lists the extended pins as
// not judged; --extended the reverse. Neither report carries the secret.
func impactOfExtended(t *testing.T, ctx context.Context, src impact.Source, agent string, public, extended []byte) {
	for _, tc := range []struct {
		card              []byte
		ext               bool
		judged, notJudged int
	}{{public, false, 1, 2}, {extended, true, 2, 1}} {
		rep, err := impact.Assess(ctx, src, agent, tc.card, impact.Options{Extended: tc.ext})
		must(t, err)
		if len(rep.Tasks) != tc.judged || len(rep.Skipped) != tc.notJudged || rep.Counts.Continue != tc.judged {
			t.Errorf("impact (extended %v): tasks %+v, skipped %+v, counts %+v", tc.ext, rep.Tasks, rep.Skipped, rep.Counts)
		}
		b, err := json.Marshal(rep)
		must(t, err)
		if strings.Contains(fmt.Sprintf("%s %+v", b, rep), extSecret) {
			t.Error("the secret is in the impact report")
		}
	}
}

func sameTasks(got, want []census.CardTasks) bool {
	return fmt.Sprint(got) == fmt.Sprint(want)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
