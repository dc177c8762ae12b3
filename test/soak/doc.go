// Command soak is a measuring tool, not part of carddrift: it drives a
// running `carddrift serve` (-nats-url; serve started with --fetch-allow
// 127.0.0.0/8) with the simulated fleet's traffic for -duration, in
// rounds of -round on the same fleet (each round a schedule of card
// changes of its own, task ids of its own, and its scorecard line), and
// samples every -sample-every serve's /metrics (-metrics-url: RSS, heap in
// use, heap objects, goroutines, open files, CPU, events handled), every
// stream of the server (bytes, messages, subjects — a KV bucket's keys —
// and last sequence), the lifecycle consumers' backlog and the machine's
// load. -out FILE keeps every sample as a line of JSON. It ends with each
// series' first, last, least and greatest values and its least-squares
// slope per hour, over the whole soak and over its second half (a series
// that grows to a limit and stays there has a second-half slope near 0):
// what grows without bound over hours shows as a slope.
//
//	go run ./test/soak -nats-url nats://127.0.0.1:4222 -metrics-url http://127.0.0.1:9464/metrics -agents 400 -duration 2h
package main
