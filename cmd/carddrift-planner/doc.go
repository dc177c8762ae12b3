// Command carddrift-planner is the reference planner: it subscribes to
// card.drift through a durable consumer it names (package events/client/planner)
// and acts on each verdict as a planner service would:
//
//   - abort: cancel the task (this reference prints the cancellation; a real
//     planner calls tasks/cancel on its A2A client);
//   - replan: re-read the live card with the planner Checker and, when it
//     still satisfies the task's requirements (from its pin), publish a new
//     a2a.task.submitted with it (onto the verdict's replanSkill, if any),
//     which replaces the pin; else abort. A task on the extended card is
//     re-read with --agent-credentials, and aborted without a credential;
//   - continue: log it.
//
// Every flag can be set as CARDDRIFT_<FLAG> (upper case, dashes as
// underscores): --nats-url is CARDDRIFT_NATS_URL.
//
// # With carddrift serve and simulate
//
//	carddrift serve --fetch-allow 127.0.0.0/8 &                  # embedded NATS on 127.0.0.1:4222
//	carddrift-planner --fetch-allow 127.0.0.0/8 &                # acts on every verdict
//	carddrift simulate --agents 20 --duration 60s
//
// With carddrift demo, point --nats-url at the embedded NATS URL it prints.
// The simulated fleet lives on loopback, which --fetch-allow must name.
//
// Output: one line per verdict on stdout (--json: one JSON object per
// line); errors are logged to stderr. Exit status 0 after a clean stop (SIGINT,
// SIGTERM or --limit), 1 on a runtime error, 2 on a usage error.
package main
