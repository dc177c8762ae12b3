package a2aemit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/client/a2aemit"
	"github.com/carddrift/carddrift/events/client/clienttest"
	"github.com/carddrift/carddrift/store/fetcher"
)

// An existing a2a-go client gets carddrift's lifecycle events by adding one
// option. The agent here is an a2a-go server (a2asrv, JSON-RPC) on loopback.
func ExampleWithLifecycleEvents() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	card := cardJSON(srv.URL+"/a2a", true, `"text/plain"`)
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(translator{})))
	mux.HandleFunc(a2aemit.WellKnownPath, func(w http.ResponseWriter, _ *http.Request) { w.Write(card) })
	ctx := context.Background()
	rec := &clienttest.Recorder{}

	// Discover the card keeping the bytes as served (through carddrift's
	// fetcher, whose SSRF guard must let this loopback agent in), build the
	// client with the interceptor (recording the events to print them: a
	// real client passes an *client.Emitter), and say what the task is
	// planned for.
	f, err := fetcher.New(fetcher.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		panic(err)
	}
	defer f.Close()
	c, err := a2aemit.ResolveCard(ctx, f, srv.URL)
	if err != nil {
		panic(err)
	}
	client, err := a2aclient.NewFromCard(ctx, c.AgentCard,
		a2aemit.WithLifecycleEvents(rec, a2aemit.Options{RawCard: c.Raw, CardURL: c.URL}))
	if err != nil {
		panic(err)
	}
	defer client.Destroy()
	ctx = a2aemit.WithPlan(ctx, a2aemit.Plan{SkillID: "translate", Posture: detector.Degrade, Idempotent: true})

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "translate: hello"})
	for _, err := range client.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: msg}) {
		if err != nil {
			panic(err)
		}
	}
	for _, d := range rec.Events() {
		fmt.Println(clienttest.Kind(d))
	}
	fmt.Println("card as served:", string(c.Raw) == string(card))
	// Output:
	// submitted skill=translate stream=true push=false in=[text/plain] posture=degrade card=true
	// request message/stream #1
	// status submitted
	// status input-required
	// card as served: true
}
