// Command iofloor is a measuring tool, not part of carddrift: the I/O that
// carddrift serve's contract and design cause per lifecycle event, done by a
// process with none of carddrift's logic, so that serve's CPU per 1,000
// events of a fleet's mix can be read against the floor of its round trips
// (test/iofloor.sh runs both against the same traffic).
//
// Like serve (with --partitions 8), it consumes the lifecycle stream through
// eight durable partition consumers of its own and acknowledges every event
// once what it caused is stored. Beside the acknowledgement it does, per
// event, what contract v1.3 (DESIGN, "Wire economy") leaves serve's workers
// and fetcher to do over the network, sized as carddrift's:
//
//   - a submission (a2a.task.submitted): the pin's KV put and a card.pinned
//     publish (serve pins every task);
//   - the first event of an agent after -lease since its last fetch: the
//     agent's card fetched over HTTP (one keep-alive pool, as the
//     fetcher's) and one lease write (a compare-and-set) — with -lease set
//     so that the fetch count matches serve's; a card.observed publish at
//     the agent's first fetch and then once per -observe-heartbeat;
//   - every -repin-every'th event: a pin put (transitions that change a
//     task's pin write it back: ~1 in 17 events in the mix);
//   - every -drift-every'th event: a card.drift publish.
//
// Pin puts and card events are published asynchronously, and an event is
// acknowledged once all of its writes have their PubAcks (the guarantee
// DESIGN states); no watch delivers its own writes back.
//
// With -data-dir it embeds its JetStream server as serve does without
// --nats-url (storage in that directory, clients on -nats-port) and reaches
// it in process, as serve's workers do: the process's CPU is then the
// server's too.
//
// It decodes and validates nothing, keeps no pins, judges nothing. Its
// buckets and stream (IOFLOOR_*) live beside carddrift's; on SIGINT it
// prints what it did and deletes them. It serves process_cpu_seconds_total
// at /metrics on -http-addr, which carddrift simulate --metrics-url reads as
// it reads serve's.
package main
