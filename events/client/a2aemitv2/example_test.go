package a2aemitv2_test

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/client/a2aemitv2"
	"github.com/carddrift/carddrift/events/client/a2aemitv2/a2aemitv2test"
	"github.com/carddrift/carddrift/events/client/clienttest"
	"github.com/carddrift/carddrift/store/fetcher"
)

// An existing a2a-go/v2 (A2A v1.0) client gets carddrift's lifecycle events
// by adding one option. The agent here is an a2a-go/v2 server (a2asrv, its
// JSON-RPC handler and its agent-card handler, package a2aemitv2test) on
// loopback.
func ExampleWithLifecycleEvents() {
	a := a2aemitv2test.NewAgent(true)
	defer a.Close()
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
	card, err := a2aemitv2.ResolveCard(ctx, f, a.URL())
	if err != nil {
		panic(err)
	}
	cl, err := a2aclient.NewFromCard(ctx, card.AgentCard,
		a2aemitv2.WithLifecycleEvents(rec, a2aemitv2.Options{RawCard: card.Raw, CardURL: card.URL}))
	if err != nil {
		panic(err)
	}
	defer cl.Destroy()
	ctx = a2aemitv2.WithPlan(ctx, a2aemitv2.Plan{SkillID: "translate", Posture: detector.Degrade, Idempotent: true})

	var id a2a.TaskID
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("translate: hello"))
	for ev, err := range cl.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
		if err != nil {
			panic(err)
		}
		id = ev.TaskInfo().TaskID
	}
	answer := a2a.NewMessageForTask(a2a.MessageRoleUser, a2a.TaskInfo{TaskID: id}, a2a.NewTextPart("French"))
	if _, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: answer}); err != nil {
		panic(err)
	}
	// A blocking SendMessage answers with the finished task: its artifact,
	// then its last state (the working state in between is not seen).
	for _, d := range rec.Events() {
		fmt.Println(clienttest.Kind(d))
	}
	fmt.Println("card as served:", string(card.Raw) == string(a.Served()))
	// Output:
	// submitted skill=translate stream=true push=false in=[text/plain] posture=degrade card=true
	// request SendStreamingMessage #1
	// status TASK_STATE_SUBMITTED
	// status TASK_STATE_WORKING
	// status TASK_STATE_INPUT_REQUIRED
	// request SendMessage #1
	// artifact [text/plain]
	// status TASK_STATE_COMPLETED
	// card as served: true
}
