package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store/fetcher"
)

// TestTimelineExtendedPin: a task's timeline says which card its pin is
// (card.pinned extended: the extended card, or unavailable: the public card).
func TestTimelineExtendedPin(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	pin := func(task, extended string) replay.Entry {
		return replay.Entry{Time: t0, Kind: replay.KindPin, Type: events.TypePinned, TaskID: task, AgentURL: "https://ledger.example",
			Data: events.Pinned{TaskID: task, AgentURL: "https://ledger.example", Source: events.PinFirstFetch, Extended: extended}}
	}
	tl := &replay.Timeline{Entries: []replay.Entry{pin("ext", events.ExtendedPinned), pin("pub", events.ExtendedUnavailable), pin("plain", "")}}
	var b bytes.Buffer
	if err := streamTimeline(tl, false)(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pinned (first-fetch, the extended card)", "pinned (first-fetch, extended card unavailable: the public card)", "pinned (first-fetch)\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, b.String())
		}
	}
}

// extSecret is the credential every replay rendering is searched for.
const extSecret = "tok-0e51f2c9-replay-extended-secret"

// ledgerAgent is a v1.0 JSON-RPC agent whose public card (1.0.0) offers an
// extended card (2.0.0, with audit-ledger) to "Bearer extSecret" only.
func ledgerAgent(t *testing.T) (url string, public, extended func() []byte) {
	var srv *httptest.Server
	card := func(version string, skills ...string) []byte {
		var s []string
		for _, id := range skills {
			s = append(s, fmt.Sprintf(`{"id":%q,"name":%q,"description":"d","tags":["t"]}`, id, id))
		}
		return fmt.Appendf(nil, `{"name":"Ledger","description":"ledger agent","version":%q,`+
			`"supportedInterfaces":[{"url":"%s/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],`+
			`"capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[%s]}`,
			version, srv.URL, strings.Join(s, ","))
	}
	public = func() []byte { return card("1.0.0", "summarize") }
	extended = func() []byte { return card("2.0.0", "summarize", "audit-ledger") }
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		switch r.URL.Path {
		case "/.well-known/agent-card.json":
			_, _ = w.Write(public())
		case "/a2a":
			if got := r.Header.Get("Authorization"); got != "Bearer "+extSecret {
				http.Error(w, "token "+got+" not accepted", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, extended())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, public, extended
}

// TestReplayHTMLExtendedPin: the replay page of a task pinned on the
// extended card — recorded by a worker with credentials over an embedded
// JetStream — says so in the task's story (planned against the extended
// card), its pinned band and its entries, and carries no secret; the text
// story says it too.
func TestReplayHTMLExtendedPin(t *testing.T) {
	agent, _, extended := ledgerAgent(t)
	creds, err := fetcher.ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": "Bearer %s"}}}`, agent, extSecret), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{Rig: servicetest.Start(t, servicetest.Options{Source: "urn:client:replay-test", Workers: []string{"replay-test-worker"},
		Worker: func(o *worker.Options) { o.Fetch.Credentials = creds }})}
	ctx := context.Background()
	if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: "ext", AgentURL: agent, SkillID: "audit-ledger",
		Requires: events.Requires{ExtendedCard: true}}); err != nil {
		t.Fatal(err)
	}
	r.waitCardEvents(events.TypePinned, 1)
	extDigest, _ := detector.Digest(extended())
	tl, err := r.reader().Timeline(ctx, replay.Query{TaskID: "ext"})
	if err != nil {
		t.Fatal(err)
	}
	var page, text bytes.Buffer
	if err := tl.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if err := streamTimeline(tl, false)(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first-fetch, the extended card, pinned", "pinned " + extDigest + " (first-fetch, the extended card)"} {
		if !strings.Contains(html.UnescapeString(page.String()), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if want := "(first-fetch, the extended card, pinned"; !strings.Contains(text.String(), want) {
		t.Errorf("text story lacks %q:\n%s", want, text.String())
	}
	for what, out := range map[string]string{"page": page.String(), "text": text.String()} {
		if strings.Contains(out, extSecret) {
			t.Errorf("the secret is in the replay %s", what)
		}
	}
}
