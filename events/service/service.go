package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carddrift/carddrift/events/internal/defaults"
	"github.com/carddrift/carddrift/events/internal/retained"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/events/worker/budget"
	"github.com/carddrift/carddrift/store"
)

// DefaultSetupTimeout bounds connecting and provisioning in Open.
const DefaultSetupTimeout = 30 * time.Second

// ErrInvalidOptions is returned (wrapped) by Open for an invalid
// Options.Config or Options.Worker.
var ErrInvalidOptions = errors.New("service: invalid options")

// Options configure a Service. Zero fields take their defaults.
type Options struct {
	// Conn is the NATS connection to use; the caller closes it. Nil: an
	// embedded server with storage in DataDir on 127.0.0.1:Port (0: free).
	Conn     *nats.Conn
	DataDir  string
	Port     int
	ConnName string

	Config store.Config
	// Stores, when set, are used as they are; otherwise Open provisions
	// them (store.Open) or, with Bind, binds to existing ones.
	Stores *store.Stores[task.Pin]
	Bind   bool

	// Workers is how many workers run (default 1).
	Workers int
	// Worker is every worker's options (Name suffixed "-1", "-2", … when
	// more than one runs; nil stores and Metrics are the service's).
	Worker worker.Options
	// PinCache, when positive, puts a store.CachedPins of that many
	// entries in front of the pins; the workers make it forget when one of
	// their partitions moves (worker.Options.Pins).
	PinCache       int
	PinCacheMaxAge time.Duration
	PinCacheBytes  int64
	// MemoryBudget, when positive, is split across the byte bounds left at
	// zero (PinCacheBytes, the workers').
	MemoryBudget budget.Bytes
	// Registerer registers the shared metrics (nil: not registered).
	Registerer prometheus.Registerer

	// SetupTimeout bounds connecting and provisioning (default 30s; <0: none).
	SetupTimeout time.Duration
	// Readiness, when set, is kept up to date from Open on.
	Readiness *Readiness
}

// Service is carddrift running: a connection, the stores and the workers.
// Open builds it, Run (or Start) runs it, Close releases it. Its methods are
// safe for concurrent use.
type Service struct {
	srv     *server.Server // the embedded server, or nil
	nc      *nats.Conn
	ownConn bool
	js      jetstream.JetStream
	cfg     store.Config
	stores  *store.Stores[task.Pin]
	pins    *store.CachedPins[task.Pin]
	metrics *worker.Metrics
	workers []*worker.Worker

	ready     chan struct{}
	readyOnce sync.Once
	readiness *Readiness
	close     func() error // release, once
}

// Open connects (or starts the embedded server), provisions or binds the
// stores and builds the workers, without running them. On error everything
// it started is released.
func Open(ctx context.Context, opts Options) (_ *Service, err error) {
	opts.SetupTimeout = defaults.Positive(opts.SetupTimeout, DefaultSetupTimeout)
	opts.Workers = defaults.Positive(opts.Workers, 1)
	cfg := opts.Config
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	s := &Service{nc: opts.Conn, cfg: cfg, ready: make(chan struct{}), readiness: opts.Readiness}
	s.close = sync.OnceValue(s.release)
	if s.readiness == nil {
		s.readiness = &Readiness{}
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.nc == nil {
		if s.srv, err = startEmbedded(opts.DataDir, opts.Port, embeddedReserve(&cfg)); err != nil {
			return nil, err
		}
		if s.nc, err = nats.Connect(s.srv.ClientURL(), nats.Name(cmp.Or(opts.ConnName, "carddrift")), nats.InProcessServer(s.srv)); err != nil {
			return nil, fmt.Errorf("connect to the embedded server: %w", err)
		}
		s.ownConn = true
	}
	if s.js, err = jetstream.New(s.nc, jetstream.WithPublishAsyncTimeout(asyncAckTimeout)); err != nil {
		return nil, err
	}

	setup, cancel := ctx, context.CancelFunc(func() {})
	if opts.SetupTimeout > 0 {
		setup, cancel = context.WithTimeout(ctx, opts.SetupTimeout)
	}
	defer cancel()
	if s.stores = opts.Stores; s.stores == nil {
		s.readiness.waitFor("provisioning streams and buckets")
		if s.stores, err = setupStores(setup, s.nc, s.js, cfg, opts.Bind, s.readiness, opts.Worker.Logger); err != nil {
			return nil, err
		}
	}
	s.readiness.waitFor("starting workers")

	if opts.MemoryBudget > 0 {
		sh, w := budget.Split(opts.MemoryBudget), &opts.Worker
		opts.PinCacheBytes = cmp.Or(opts.PinCacheBytes, int64(sh.Pins))
		w.CardCacheBytes = cmp.Or(w.CardCacheBytes, sh.CardsOption())
		w.DiffMemoBytes = cmp.Or(w.DiffMemoBytes, sh.DiffMemoOption())
		w.PullBufferBytes = cmp.Or(w.PullBufferBytes, int64(sh.Pull)/2)
		w.InflightBytes = cmp.Or(w.InflightBytes, int64(sh.Pull)/2)
		w.Fetch.CacheBytes = cmp.Or(w.Fetch.CacheBytes, sh.LiveCardsOption())
		w.Fetch.LeaseCopyBytes = cmp.Or(w.Fetch.LeaseCopyBytes, sh.LeaseCopyOption())
	}
	wo := opts.Worker
	wo.Config = cfg
	if wo.Pins == nil {
		wo.Pins = s.stores.Pins
		if opts.PinCache > 0 {
			var co []store.CacheOption
			if opts.PinCacheMaxAge > 0 {
				co = append(co, store.WithCacheMaxAge(opts.PinCacheMaxAge))
			}
			if opts.PinCacheBytes > 0 {
				co = append(co, store.WithCacheBytes(opts.PinCacheBytes, PinSize), store.WithCacheDetach(DetachPin))
			}
			s.pins = store.NewCachedPins(s.stores.Pins, opts.PinCache, co...)
			wo.Pins = s.pins
		}
	}
	if wo.Cards == nil {
		wo.Cards = s.stores.Cards
	}
	if wo.Leases == nil {
		wo.Leases = s.stores.Leases
	}
	if wo.Metrics == nil {
		wo.Metrics = worker.NewMetrics(opts.Registerer)
	}
	s.metrics = wo.Metrics
	for i := range opts.Workers {
		o := wo
		if opts.Workers > 1 {
			o.Name = fmt.Sprintf("%s-%d", wo.Name, i+1)
		}
		w, err := worker.New(s.js, o)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		s.workers = append(s.workers, w)
	}
	return s, nil
}

// PinSize estimates the bytes a cached pin retains (retained.Size), without
// the cache's own per-entry overhead.
func PinSize(p task.Pin) int64 { return retained.Size(&p) - int64(unsafe.Sizeof(&p)) }

// DetachPin returns a copy of p that shares no memory with it
// (task.Pin.Detach).
func DetachPin(p task.Pin) task.Pin { return p.Detach() }

// MemoryStats is what the caches the memory budget bounds hold now.
type MemoryStats struct {
	Pins      store.CacheStats
	Cards     int
	CardBytes int64
}

// MemoryStats returns what the caches hold (for metrics and tests).
func (s *Service) MemoryStats() MemoryStats {
	var m MemoryStats
	if s.pins != nil {
		m.Pins = s.pins.Stats()
	}
	for _, w := range s.workers {
		n, b := w.CardCacheStats()
		m.Cards += n
		m.CardBytes += b
	}
	return m
}

// StartEmbedded starts an in-process JetStream server with storage in dir
// on 127.0.0.1:port (0: free). The caller shuts it down.
func StartEmbedded(dir string, port int) (*server.Server, error) {
	return startEmbedded(dir, port, reserve{})
}

// reserve is what an embedded server lets its streams reserve, per
// storage kind (zero: nats-server's default, 75% of what is free).
type reserve struct{ file, memory int64 }

// embeddedReserve is cfg's byte limits and a quarter more: the server
// reserves every limit at creation, and 75% of a small disk may not do.
func embeddedReserve(cfg *store.Config) reserve {
	var total int64
	for _, n := range cfg.Limits() {
		total += n
	}
	total += total / 4
	if cfg.Storage == jetstream.MemoryStorage {
		return reserve{memory: total}
	}
	return reserve{file: total}
}

// EmbeddedServerName is the server name of every embedded server.
const EmbeddedServerName = "carddrift-embedded"

func startEmbedded(dir string, port int, r reserve) (*server.Server, error) {
	if dir == "" {
		return nil, errors.New("embedded NATS: no storage directory")
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: EmbeddedServerName, JetStream: true, StoreDir: dir,
		JetStreamMaxStore: r.file, JetStreamMaxMemory: r.memory,
		Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("embedded NATS did not become ready within 10s")
	}
	return srv, nil
}

// URL is the embedded server's client URL, or the connection's.
func (s *Service) URL() string {
	if s.srv != nil {
		return s.srv.ClientURL()
	}
	return s.nc.ConnectedUrl()
}

// Embedded reports whether the service runs its own NATS server.
func (s *Service) Embedded() bool { return s.srv != nil }

// Conn is the service's NATS connection.
func (s *Service) Conn() *nats.Conn { return s.nc }

// JetStream is the service's JetStream client.
func (s *Service) JetStream() jetstream.JetStream { return s.js }

// Config is the service's store.Config, defaults applied.
func (s *Service) Config() store.Config { return s.cfg }

// Stores are the stores the workers use (without the pin cache).
func (s *Service) Stores() *store.Stores[task.Pin] { return s.stores }

// Metrics are the workers' metrics.
func (s *Service) Metrics() *worker.Metrics { return s.metrics }

// notReady says why a running service is not ready.
func (s *Service) notReady() string {
	if !s.nc.IsConnected() {
		return "disconnected from NATS"
	}
	for _, w := range s.workers {
		if reason := w.NoSpace(); reason != "" {
			return reason
		}
	}
	return ""
}

// Ready is closed once every worker is consuming.
func (s *Service) Ready() <-chan struct{} { return s.ready }

// Run runs every worker until ctx is done, then lets each
// drain within its DrainTimeout and returns nil; if a worker fails, it
// stops the others and returns the failures. Call it once.
func (s *Service) Run(ctx context.Context) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make([]error, len(s.workers))
	var wg sync.WaitGroup
	for i, w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(runCtx); err != nil {
				errs[i] = err
				stop()
			}
		}()
	}
	go func() {
		for _, w := range s.workers {
			select {
			case <-w.Ready():
			case <-runCtx.Done():
				return
			}
		}
		s.readyOnce.Do(func() {
			s.readiness.ready(s.notReady)
			close(s.ready)
		})
	}()
	go func() {
		// Not ready from the moment it drains.
		<-runCtx.Done()
		s.readiness.waitFor("stopping")
	}()
	wg.Wait()
	stop()
	return errors.Join(errs...)
}

// Start runs the service in the background (Run) and waits until every
// worker consumes, or Run fails, or within (when positive) passes.
func (s *Service) Start(ctx context.Context, within time.Duration) (*Running, error) {
	runCtx, cancel := context.WithCancel(ctx)
	r := &Running{cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = s.Run(runCtx)
		close(r.done)
	}()
	var timeout <-chan time.Time
	if within > 0 {
		t := time.NewTimer(within)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-s.Ready():
		return r, nil
	case <-r.done:
		if r.err == nil {
			r.err = ctx.Err()
		}
		return nil, fmt.Errorf("workers stopped before they were ready: %w", r.err)
	case <-timeout:
		r.Stop()
		return nil, fmt.Errorf("workers not ready within %v", within)
	}
}

// Close releases the workers and what Open started. Call it after Run has
// returned; safe to call twice.
func (s *Service) Close() error { return s.close() }

func (s *Service) release() error {
	var errs []error
	for _, w := range s.workers {
		errs = append(errs, w.Close())
	}
	if s.ownConn {
		s.nc.Close()
	}
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
	}
	return errors.Join(errs...)
}

// Running is a service started with Start.
type Running struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Cancel asks the service to stop (its workers drain) and returns at once.
func (r *Running) Cancel() { r.cancel() }

// Done is closed when the service has stopped.
func (r *Running) Done() <-chan struct{} { return r.done }

// Err is Run's result once Done is closed.
func (r *Running) Err() error {
	<-r.done
	return r.err
}

// Stop cancels the service, waits until its workers have drained and
// returns Run's result. Safe to call twice.
func (r *Running) Stop() error {
	r.cancel()
	return r.Err()
}

// Backlog returns how many messages the durable consumers of stream have
// not had acknowledged yet, summed.
func Backlog(ctx context.Context, js jetstream.JetStream, stream string, durables ...string) (uint64, error) {
	var n uint64
	for _, d := range durables {
		c, err := js.Consumer(ctx, stream, d)
		if err != nil {
			return 0, fmt.Errorf("consumer %s: %w", d, err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			return 0, fmt.Errorf("consumer %s: %w", d, err)
		}
		n += info.NumPending + uint64(info.NumAckPending)
	}
	return n, nil
}

// WaitDrained polls Backlog until it is zero, or returns an error naming
// the last backlog when ctx is done.
func WaitDrained(ctx context.Context, js jetstream.JetStream, stream string, durables []string, poll time.Duration) error {
	for {
		n, err := Backlog(ctx, js, stream, durables...)
		if err == nil && n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("%s not drained: %w (%w)", stream, err, ctx.Err())
			}
			return fmt.Errorf("%s not drained: backlog %d (%w)", stream, n, ctx.Err())
		case <-time.After(max(poll, time.Millisecond)):
		}
	}
}

// WaitDrained is WaitDrained for the workers' lifecycle consumers.
func (s *Service) WaitDrained(ctx context.Context) error {
	return WaitDrained(ctx, s.js, s.cfg.LifecycleStream, s.cfg.ConsumerNames(), 20*time.Millisecond)
}

// Readiness is what a process's /readyz answers: ready, or why not. Safe
// for concurrent use; the zero Readiness is not ready ("starting").
type Readiness struct {
	mu     sync.Mutex
	reason string
	set    bool
	check  func() string
}

// NotReady returns why the process is not ready, or "" when it is.
func (r *Readiness) NotReady() string {
	r.mu.Lock()
	reason, set, check := r.reason, r.set, r.check
	r.mu.Unlock()
	switch {
	case !set:
		return "starting"
	case reason != "":
		return reason
	case check != nil:
		return check()
	}
	return ""
}

// waitFor records why the process is not ready yet.
func (r *Readiness) waitFor(reason string) {
	r.mu.Lock()
	r.reason, r.set = reason, true
	r.mu.Unlock()
}

// ready records that start-up is over; check says the rest.
func (r *Readiness) ready(check func() string) {
	r.mu.Lock()
	r.reason, r.set, r.check = "", true, check
	r.mu.Unlock()
}
