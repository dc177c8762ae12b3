package planner_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client/planner"
	eventpub "github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

const exampleCard = `{
  "name": "Travel agent", "description": "books trips", "version": "2.0.0",
  "protocolVersion": "0.3.0", "url": "https://travel.example/a2a", "preferredTransport": "JSONRPC",
  "capabilities": {"streaming": false},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["application/json"],
  "skills": [{"id": "book-flight", "name": "Book a flight", "description": "books one", "tags": ["travel"]}],
  "securitySchemes": {"oauth": {"type": "oauth2", "flows": {}}},
  "security": [{"oauth": ["book"]}]
}`

// detector.Unsatisfied tells what of a task's requirements a card does not
// satisfy (Decision.Unmet).
// It is pure: the card here is parsed from a string.
func Example_unsatisfied() {
	card, err := detector.Parse([]byte(exampleCard))
	if err != nil {
		panic(err)
	}
	req := detector.Requirements{
		SkillID: "book-hotel", Streaming: true,
		InputModes: []string{"text/plain"}, OutputModes: []string{"application/pdf"},
		Security: []string{"bearer"},
	}
	for _, u := range detector.Unsatisfied(card, req) {
		fmt.Printf("%s: %s\n", u.Kind, u.Message)
	}
	// Output:
	// skill-not-offered: skill "book-hotel" is not offered
	// streaming-not-supported: the task streams and the card does not declare streaming
	// output-mode-not-produced: output mode "application/pdf" is not produced (produced: application/json)
	// security-scheme-missing: security scheme "bearer" is not declared
	// security-requirements-unmet: no security requirement is met by the client's schemes (bearer); required: {oauth}
}

// Before submitting, a planner checks the live card against the task and
// against the card it planned with. The agent here is an httptest server on
// loopback, which the SSRF guard refuses unless Allow names it — as
// `carddrift serve --fetch-allow` does for workers.
func ExampleChecker_Check() {
	live := []byte(exampleCard)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(live)
	}))
	defer agent.Close()

	chk, err := planner.NewChecker(planner.CheckerOptions{Fetch: fetcher.Options{
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	}})
	if err != nil {
		panic(err)
	}
	defer chk.Close()

	// The planner read the card when it still streamed.
	planned := []byte(strings.Replace(exampleCard, `"streaming": false`, `"streaming": true`, 1))
	req := detector.Requirements{SkillID: "book-flight", Streaming: true, Security: []string{"oauth"}, Posture: detector.FailClosed}
	d, err := chk.Check(context.Background(), req, agent.URL, planner.WithPinned(planned))
	var ue *planner.UnreachableError
	switch {
	case errors.As(err, &ue):
		fmt.Println("card unreachable:", ue.Reason)
		return
	case err != nil:
		panic(err)
	}
	fmt.Println("submit as planned:", d.OK())
	for _, u := range d.Unmet {
		fmt.Println("unmet:", u.Kind)
	}
	fmt.Println("verdict:", d.Verdict.Action)
	for _, f := range d.Findings {
		fmt.Println("finding:", f.Rule, f.Severity)
	}
	// Output:
	// submit as planned: false
	// unmet: streaming-not-supported
	// verdict: abort
	// finding: streaming-disabled breaking
	// finding: content-changed-without-version-bump warning
}

// A planner names its durable consumer and acts on each verdict; returning
// nil acknowledges it. The server here is embedded, and the verdict is
// published by hand where a carddrift worker would publish it.
func ExampleSubscribe() {
	js, stop := exampleJetStream()
	defer stop()
	ctx := context.Background()

	acted := make(chan string, 1)
	sub, err := planner.Subscribe(ctx, js, planner.Options{
		Durable:     "travel-planner",
		Agent:       "https://travel.example",
		MinSeverity: detector.Breaking,
	}, func(ctx context.Context, v planner.Verdict) error {
		switch v.Action {
		case detector.Abort:
			acted <- fmt.Sprintf("cancel %s: %s (impact %s)", v.TaskID, v.Reason, v.Impact)
		case detector.Replan:
			acted <- "re-plan " + v.TaskID
		}
		return nil
	})
	if err != nil {
		panic(err)
	}

	pub, _ := eventpub.New(js, "carddrift/worker-1")
	_, err = pub.Publish(ctx, events.Event{Data: events.Drift{
		TaskID: "task-42", AgentURL: "https://travel.example/a2a", CardURL: "https://travel.example/.well-known/agent-card.json",
		Pinned: events.CardRef{Digest: "sha256:1111111111111111111111111111111111111111111111111111111111111111", Fingerprint: "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
		Live:   events.CardRef{Digest: "sha256:2222222222222222222222222222222222222222222222222222222222222222", Fingerprint: "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
		Findings: []detector.Finding{{Rule: "streaming-disabled", Severity: detector.Breaking, Path: "/capabilities/streaming",
			Before: true, After: false, Message: "streaming is no longer supported", Touches: true}},
		Verdict: detector.Verdict{Action: detector.Abort, Posture: detector.FailClosed, Reason: "fail-closed: streaming-disabled"},
		Trigger: events.Trigger{EventID: "evt-2", Type: events.TypeRequest},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println(<-acted)

	sub.Drain()
	<-sub.Closed()
	// Output:
	// cancel task-42: fail-closed: streaming-disabled (impact breaking)
}

// exampleJetStream starts an embedded JetStream server
// (servicetest.EmbeddedJetStream) with carddrift's streams and buckets.
func exampleJetStream() (js jetstream.JetStream, stop func()) {
	js, stop = servicetest.EmbeddedJetStream()
	cfg := store.DefaultConfig()
	cfg.Storage = jetstream.MemoryStorage
	if err := store.Provision(context.Background(), js, cfg); err != nil {
		panic(err)
	}
	return js, stop
}
