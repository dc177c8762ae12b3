// Package fleet simulates a fleet of A2A agents whose cards drift, for the
// demo, the end-to-end suites and the benchmarks.
//
// # Agents
//
// New builds N agents (default 40) from the shapes of real agent cards
// embedded under cards/ (copies of detector/testdata/cards: A2A v0.2, v0.3,
// v1.0 and hybrid cards); Start gives each its own net/http server on
// 127.0.0.1 (port 0), so each agent has its own host:port, which is its
// agentUrl and the URL of its interfaces. v0.2 cards are served at
// /.well-known/agent.json only, the others at /.well-known/agent-card.json.
// The seed decides which template and which caching behaviour each agent
// gets:
//
//   - CacheStrong: Cache-Control max-age and a strong ETag of the body;
//   - CacheVersion: max-age and an ETag derived from "version" alone (A2A
//     v1.0 §8.6), so a content change without a version bump still answers
//     304 to If-None-Match — the case carddrift's periodic unconditional
//     fetch exists for;
//   - CacheRevalidate: "no-cache" and a strong ETag;
//   - CacheNone: no caching headers at all.
//
// One agent varies its card by the A2A-Version request header (v0.3 card by
// default, its v1.0 twin to "A2A-Version: 1.0", "Vary: A2A-Version"): a
// client that does not fetch under fixed headers sees content negotiation as
// drift. Every agent honours If-None-Match with 304 and counts its requests
// (Agent.Requests, Agent.Stats) for the scorecard's fetches per agent per
// lease. Agent.SetCard, SetReplicas (a rolling deploy: replicas behind one
// URL answer in turn) and SetOutage (Refused closes the listener, Unavailable
// answers 503) change what it serves. Close shuts every server down within
// Options.ShutdownTimeout and returns when every goroutine the fleet started
// has exited.
//
// # Scenarios
//
// Scenarios is the scenario library (ScenarioNames lists it; split-brain is
// two replicas behind one URL serving different cards at once, which
// carddrift must report as card.inconsistent). Each is data: task profiles,
// a verdict table of Expectations (for a task planned against one card
// version and meeting another: the outcome and rule ids that must be among
// the findings) and a build function that derives the card versions and
// timed steps from an agent's card. The tables are tested against
// detector.Evaluate on every template card.
//
// Schedule assigns scenarios to agents deterministically from a seed (the
// remaining agents form the control group) and returns one Assignment per
// agent: its cards by label with their digests, steps, profiles and
// expectations. Fleet.Play (or the blocking Fleet.Run) applies the steps at
// their offsets in one goroutine it owns. Score judges what carddrift
// published against the schedule (Assignment.ExpectDigests maps a
// card.drift's digests to labels and looks the verdict up).
//
// # Use
//
//	f, err := fleet.New(fleet.Options{Agents: 40, Seed: seed})
//	if err != nil { … }
//	if err := f.Start(ctx); err != nil { … }
//	defer f.Close()
//	sched, err := fleet.Schedule(seed, f.Agents(), nil, 30*time.Second)
//	if err != nil { … }
//	p, err := f.Play(ctx, sched) // base cards are served when Play returns
//	if err != nil { … }
//	defer p.Stop()
//	// … drive traffic, collect verdicts, score them against sched …
//
// The fleet serves loopback addresses, which carddrift's fetcher refuses by
// default: run it with --fetch-allow 127.0.0.0/8.
package fleet
