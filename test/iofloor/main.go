package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

// Sizes of what it writes: about what carddrift stores per write in the
// 400-agent mix (the KV streams' bytes per message, less the subject: a pin
// ~800 bytes, a lease record ~850, a card event ~1.1 KB).
const (
	pinBytes       = 800
	leaseBytes     = 850
	cardEventBytes = 1100
)

const (
	pinsBucket   = "IOFLOOR_PINS"
	leasesBucket = "IOFLOOR_LEASES"
	eventsStream = "IOFLOOR_CARD_EVENTS"
	durablePre   = "iofloor-"
)

func main() {
	url := flag.String("nats-url", nats.DefaultURL, "the NATS server (its lifecycle stream is made as serve makes it, if missing)")
	addr := flag.String("http-addr", "127.0.0.1:0", "serve /metrics (the process's CPU) and /readyz here")
	lease := flag.Duration("lease", 1500*time.Millisecond, "fetch an agent's card again after this (set it so that the fetch count matches serve's)")
	driftEvery := flag.Int("drift-every", 60, "publish a card.drift for every this many events (0: none)")
	repinEvery := flag.Int("repin-every", 17, "write a pin back for every this many events, as transitions that change a task's pin do (0: never)")
	heartbeat := flag.Duration("observe-heartbeat", 5*time.Minute, "publish card.observed at an agent's first fetch and then once per this (serve's --observe-heartbeat)")
	partitions := flag.Int("partitions", 8, "partition consumers (serve's --partitions)")
	dataDir := flag.String("data-dir", "", "embed the JetStream server, storage here (instead of -nats-url)")
	natsPort := flag.Int("nats-port", 4222, "with -data-dir: the embedded server's client port")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var opts []nats.Option
	if *dataDir != "" {
		srv, err := service.StartEmbedded(*dataDir, *natsPort)
		if err != nil {
			log.Fatal(err)
		}
		defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
		*url = srv.ClientURL()
		opts = append(opts, nats.InProcessServer(srv))
	}
	if err := run(ctx, *url, opts, *addr, *lease, *heartbeat, *driftEvery, *repinEvery, *partitions); err != nil {
		log.Fatal(err)
	}
}

// floor is the per-event I/O.
type floor struct {
	js         jetstream.JetStream
	pins       jetstream.KeyValue
	leases     jetstream.KeyValue
	hc         *http.Client
	lease      time.Duration
	heartbeat  time.Duration
	driftEvery int64
	repinEvery int64
	acks       chan pending // to the acker, in order of handling

	mu       sync.Mutex
	last     map[string]time.Time // agent URL → its last fetch
	observed map[string]time.Time // agent URL → its last card.observed
	leaseN   map[string]int       // agent URL → its lease key's number
	leaseRev map[string]uint64    // lease key → its last revision

	events, fetches, pinned, repinned, drifts, observes, failed atomic.Int64
}

// pending is an event whose writes are under way: it is acknowledged once
// every one of them is stored.
type pending struct {
	m      jetstream.Msg
	writes []jetstream.PubAckFuture
}

// maxPending bounds the events whose writes are under way (and so the
// acker's queue); the publisher's own bound is the same.
const maxPending = 4096

func run(ctx context.Context, url string, opts []nats.Option, addr string, lease, heartbeat time.Duration, driftEvery, repinEvery, partitions int) error {
	nc, err := nats.Connect(url, append(opts, nats.Name("iofloor"))...)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxPending))
	if err != nil {
		return err
	}
	var cfg store.Config
	cfg.Partitions = partitions
	cfg.SetDefaults()
	if _, err := store.Open[task.Pin](ctx, js, cfg); err != nil {
		return fmt.Errorf("lifecycle stream: %w", err)
	}
	f := &floor{js: js, lease: lease, heartbeat: heartbeat, driftEvery: int64(driftEvery), repinEvery: int64(repinEvery),
		acks: make(chan pending, maxPending), last: map[string]time.Time{}, observed: map[string]time.Time{},
		leaseN: map[string]int{}, leaseRev: map[string]uint64{},
		// The fetcher's pool: idle connections kept for every agent.
		hc: &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
			MaxIdleConns: 1024, MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second}},
	}
	if f.pins, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: pinsBucket, Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	if f.leases, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: leasesBucket, Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: eventsStream, Subjects: []string{"iofloor.card.>"},
		Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	defer f.cleanup(js)
	ackerDone := make(chan struct{})
	go f.acker(ackerDone)
	defer func() { close(f.acks); <-ackerDone }()

	top := cfg.Topology
	for p := range top.Partitions {
		cc := top.DeclaredConsumer(p)
		cc.Name, cc.Durable = durablePre+cc.Name, durablePre+cc.Durable
		c, err := js.CreateOrUpdateConsumer(ctx, top.LifecycleStream, cc)
		if err != nil {
			return err
		}
		defer js.DeleteConsumer(context.Background(), top.LifecycleStream, cc.Name)
		cons, err := c.Consume(func(m jetstream.Msg) { f.handle(ctx, m) })
		if err != nil {
			return err
		}
		defer cons.Stop()
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/readyz", func(http.ResponseWriter, *http.Request) {})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Printf("iofloor: consuming %s, /metrics on http://%s\n", top.LifecycleStream, ln.Addr())

	<-ctx.Done()
	fmt.Printf("iofloor: events %d, fetches %d, pins %d, pins written back %d, drifts %d, observed %d, failed round trips %d\n",
		f.events.Load(), f.fetches.Load(), f.pinned.Load(), f.repinned.Load(), f.drifts.Load(), f.observes.Load(), f.failed.Load())
	return nil
}

var (
	pinValue   = bytes.Repeat([]byte("p"), pinBytes)
	leaseValue = bytes.Repeat([]byte("l"), leaseBytes)
	cardEvent  = bytes.Repeat([]byte("c"), cardEventBytes)
	agentField = []byte(`"agentUrl":"`)
)

// handle does one event's I/O and hands it to the acker, which
// acknowledges it once its writes are stored. Pin puts and card events are
// published asynchronously (a KV put is a publish to its key's subject).
func (f *floor) handle(ctx context.Context, m jetstream.Msg) {
	n := f.events.Add(1)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p := pending{m: m}
	if strings.HasPrefix(m.Subject(), "a2a.task.submitted.") {
		f.pinned.Add(1)
		p.put(f, "$KV."+pinsBucket+".t"+strconv.FormatInt(n, 10), pinValue)
		p.put(f, "iofloor.card.pinned", cardEvent)
	}
	if agent := agentOf(m.Data()); agent != "" {
		if key, observe, ok := f.due(agent); ok {
			f.fetch(ctx, agent, key)
			if observe {
				f.observes.Add(1)
				p.put(f, "iofloor.card.observed", cardEvent)
			}
		}
	}
	if f.repinEvery > 0 && n%f.repinEvery == 0 {
		f.repinned.Add(1)
		p.put(f, "$KV."+pinsBucket+".t"+strconv.FormatInt(n-1, 10), pinValue)
	}
	if f.driftEvery > 0 && n%f.driftEvery == 0 {
		f.drifts.Add(1)
		p.put(f, "iofloor.card.drift", cardEvent)
	}
	select {
	case f.acks <- p:
	case <-ctx.Done():
		f.failed.Add(1) // left unacknowledged: redelivered
	}
}

// put publishes one of the event's writes asynchronously.
func (p *pending) put(f *floor, subject string, data []byte) {
	fut, err := f.js.PublishAsync(subject, data)
	if err != nil {
		f.failed.Add(1)
		return
	}
	p.writes = append(p.writes, fut)
}

// acker acknowledges each event once its writes are stored, in order of
// handling; it exits when f.acks is closed and drained (run owns it).
func (f *floor) acker(done chan<- struct{}) {
	defer close(done)
	for p := range f.acks {
		ok := true
		for _, w := range p.writes {
			select {
			case <-w.Ok():
			case <-w.Err():
				ok = false
			case <-time.After(5 * time.Second):
				ok = false
			}
		}
		if !ok {
			f.failed.Add(1) // left unacknowledged: redelivered
			continue
		}
		if p.m.Ack() != nil {
			f.failed.Add(1)
		}
	}
}

// fetch is one fetch's I/O: the card fetched and the lease recorded in one
// compare-and-set.
func (f *floor) fetch(ctx context.Context, agent, key string) {
	f.fetches.Add(1)
	if resp, err := f.hc.Get(agent + "/.well-known/agent-card.json"); err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	} else {
		f.failed.Add(1)
	}
	f.mu.Lock()
	rev := f.leaseRev[key]
	f.mu.Unlock()
	var err error
	if rev == 0 {
		rev, err = f.leases.Create(ctx, key, leaseValue)
	} else {
		rev, err = f.leases.Update(ctx, key, leaseValue, rev)
	}
	if err != nil {
		f.failed.Add(1)
		return
	}
	f.mu.Lock()
	f.leaseRev[key] = rev
	f.mu.Unlock()
}

// due reports whether agent's card is to be fetched now, and if so counts
// the fetch as done from now and gives the agent's lease key and whether
// its card.observed is due (its first fetch, or its heartbeat).
func (f *floor) due(agent string) (key string, observe, ok bool) {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.last[agent]) < f.lease {
		return "", false, false
	}
	f.last[agent] = now
	if last, seen := f.observed[agent]; !seen || now.Sub(last) >= f.heartbeat {
		f.observed[agent] = now
		observe = true
	}
	n, ok := f.leaseN[agent]
	if !ok {
		n = len(f.leaseN)
		f.leaseN[agent] = n
	}
	return "a" + strconv.Itoa(n), observe, true
}

// agentOf finds the agent URL in an event's JSON data without decoding it.
func agentOf(data []byte) string {
	i := bytes.Index(data, agentField)
	if i < 0 {
		return ""
	}
	rest := data[i+len(agentField):]
	if j := bytes.IndexByte(rest, '"'); j > 0 {
		return string(rest[:j])
	}
	return ""
}

// cleanup deletes the buckets and the stream it made.
func (f *floor) cleanup(js jetstream.JetStream) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"KV_" + pinsBucket, "KV_" + leasesBucket, eventsStream} {
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			log.Printf("iofloor: deleting %s: %v", name, err)
		}
	}
}
