// Package service runs carddrift as one unit: a NATS JetStream connection
// (an embedded server, or the caller's connection to a real deployment),
// the streams and buckets (provisioned, bound, or given), N workers that
// share one set of metrics and, optionally, a pin cache, and a shutdown
// that drains in-flight events within each worker's DrainTimeout.
// `carddrift serve` and `carddrift demo` run one; the test rig
// (events/service/servicetest) runs its workers through it.
//
//	svc, err := service.Open(ctx, service.Options{
//		DataDir: dir,                 // no Conn: an embedded server
//		Workers: 2,
//		Worker:  worker.Options{Name: "demo-worker", Fetch: fetchOpts},
//	})
//	if err != nil { … }
//	defer svc.Close()
//	running, err := svc.Start(ctx, 15*time.Second) // every worker consuming
//	…
//	err = running.Stop() // drain, then Run's result
//
// Backlog and WaitDrained tell when the workers have handled everything
// published so far; Connect is how every carddrift process dials a
// deployment.
package service
