// Command cost is a measuring tool, not part of carddrift: what a running
// deployment spends per 1,000 lifecycle events of the simulated fleet's
// mix, against what the same traffic costs with no carddrift at all.
//
// It drives the fleet (-agents on loopback; serve needs --fetch-allow
// 127.0.0.0/8) against `carddrift serve` (-nats-url) for -duration, and
// reads serve's CPU from its /metrics before and after (-metrics-url,
// process_cpu_seconds_total; the second reading once serve's lifecycle
// consumers have nothing pending), a standalone NATS server's from /proc
// (-nats-server-pid), and the machine's load. Then (-baseline, on by
// default) it plays the same traffic (fleet, seed, schedule, duration)
// again onto a scratch stream of the same server, consumed and
// acknowledged by one raw durable consumer, a process of its own
// (carddrift's hidden internal-raw-consumer: -carddrift names the binary),
// and reports the raw consumer's CPU, the server's (serve's process's when
// it embeds the server: its workers idle), and carddrift's CPU per 1,000
// events as a multiple of the baseline's, counted alike. This is the
// figure of DESIGN's cost bar; -json prints one object (scorecard, cost,
// baseline).
//
//	go run ./test/cost -nats-url nats://127.0.0.1:4222 -metrics-url http://127.0.0.1:9464/metrics \
//	  -nats-server-pid $(pgrep -n nats-server) -carddrift ./carddrift -agents 400 -duration 60s
package main
