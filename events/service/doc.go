// Package service runs carddrift as one unit: a NATS JetStream connection
// (an embedded server, or the caller's), the streams and buckets, N
// workers sharing one set of metrics and, optionally, a pin cache, and a
// shutdown that drains in-flight events. serve, demo and the test rig run
// their workers through it.
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
