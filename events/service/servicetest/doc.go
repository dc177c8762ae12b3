// Package servicetest is the one test rig of carddrift, in the manner of
// nats.go's withJSServer: Start runs a real embedded JetStream server, the
// stores and workers (through events/service), and gives the test an
// Emitter, loopback agents whose cards it swaps, and a Collector of the
// card.* events, until the test ends.
//
//	r := servicetest.Start(t, servicetest.Options{Workers: []string{"w1"}})
//	a := servicetest.NewAgent(t, servicetest.WriteupT0)
//	r.Emit.Submitted(ctx, events.Submitted{TaskID: "t", AgentURL: a.URL(), SkillID: "summarize",
//		Requires: events.Requires{Streaming: true}, Card: a.Served(servicetest.WriteupT0)})
//	a.Set(servicetest.WriteupT40)
//	r.Emit.Request(ctx, events.Request{TaskID: "t", AgentURL: a.URL(), Method: "message/stream", Attempt: 1})
//	r.Out().WaitFor(t, "the abort", func(c *servicetest.Collector) bool { return len(c.Drifts("t")) == 1 })
package servicetest
