// Package fleet simulates a fleet of A2A agents whose cards drift, for the
// demo, simulate, bench and the end-to-end suites.
//
// New builds N agents from real agent cards embedded under cards/ (copies of
// detector/testdata/cards: A2A v0.2, v0.3, v1.0 and hybrid) and Start gives
// each its own HTTP server on 127.0.0.1, so each agent's host:port is its
// agentUrl. The seed decides each agent's card and Caching; one agent varies
// its card by the A2A-Version request header. Agents honour If-None-Match,
// count their requests (Agent.Stats), and change what they serve through
// SetCard, SetReplicas (a rolling deploy) and SetOutage.
//
// The scenarios (ScenarioNames; scenarios.go) are data: task profiles, a
// verdict table of Expectations (for a task planned against one card and
// meeting another: the outcome and rule ids) and a function that derives the
// card versions and timed steps from an agent's card; the tables are tested
// against detector.Evaluate on every template card. Schedule assigns them to
// agents from a seed, the others forming the control group; Fleet.Play
// applies the steps; Traffic drives task lifecycles through client.Emitter;
// Score judges what carddrift published against the schedule. Fleet.Drive
// does all of it against a deployment:
//
//	f, err := fleet.New(fleet.Options{Agents: 40, Seed: seed})
//	if err != nil { … }
//	if err := f.Start(ctx); err != nil { … }
//	defer f.Close()
//	card, err := f.Drive(ctx, fleet.DriveOptions{JetStream: js, EventsStream: …, Seed: seed, …})
//
// The fleet serves loopback addresses, which carddrift's fetcher refuses by
// default: run it with --fetch-allow 127.0.0.0/8.
package fleet
