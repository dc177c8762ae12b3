package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/events/worker/budget"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
	"github.com/carddrift/carddrift/store/topology"
)

// The pin cache of carddrift serve, which the demo runs with too, so that
// it shows what serve does. A bounded entry age caps how long a pin written
// by another process (or expired) may be served from it.
const (
	servePinCache       = 100_000
	servePinCacheMaxAge = 10 * time.Second
	// serveGCPercent is serve's GOGC under the memory budget's limit.
	serveGCPercent = 400
)

type serveFlags struct {
	nats     natsFlags
	dataDir  string
	natsPort int
	httpAddr string
	pprof    bool
	name     string
	// cfg holds --partitions, --replicas, --ack-wait, --max-deliver and
	// --pins-ttl, fetch the fetch flags (fetchOptions adds the rest).
	cfg          store.Config
	fetch        fetcher.Options
	storage      string
	fetchAllow   string
	heartbeat    time.Duration
	drainTimeout time.Duration
	pinnedTTL    time.Duration
	logFormat    string
	logLevel     string
	trust        trustFlags
	agentCreds   string
	requireSig   bool
	storageFlags
	memBudget      budget.Bytes
	startupTimeout time.Duration
}

// storageFlags are serve's byte limits and the jobs that watch and trim
// the store (store.Monitor, store.CardsGC).
type storageFlags struct {
	storageLimit  int64
	maxBytes      [7]int64 // in the order of maxBytesFlags
	checkInterval time.Duration
	gcInterval    time.Duration
	gcGrace       time.Duration
}

// maxBytesFlags name the per-store limits: flag suffix, what it bounds,
// and the store.Config field it sets (a StorageShares entry).
var maxBytesFlags = [7]struct {
	flag, what string
	field      func(*store.Config) *int64
}{
	{"tasks", "the lifecycle stream (A2A_TASKS)", func(c *store.Config) *int64 { return &c.LifecycleMaxBytes }},
	{"card-events", "the outbound events stream (CARD_EVENTS)", func(c *store.Config) *int64 { return &c.EventsMaxBytes }},
	{"dlq", "the dead-letter stream (CARDDRIFT_DLQ)", func(c *store.Config) *int64 { return &c.DLQMaxBytes }},
	{"pins", "the pins bucket (at the limit the least recently written pins are dropped)", func(c *store.Config) *int64 { return &c.PinsMaxBytes }},
	{"cards", "the card bodies bucket", func(c *store.Config) *int64 { return &c.CardsMaxBytes }},
	{"cards-large", "the object store of large card bodies", func(c *store.Config) *int64 { return &c.CardsObjectMaxBytes }},
	{"leases", "the leases bucket", func(c *store.Config) *int64 { return &c.LeasesMaxBytes }},
}

// sizeVar defines a byte size flag (store.ParseSize); zero means unset.
func sizeVar(fs *flag.FlagSet, p *int64, name, usage string) {
	fs.Func(name, usage, func(v string) (err error) {
		*p, err = store.ParseSize(v)
		return err
	})
}

func (f *storageFlags) register(fs *flag.FlagSet) {
	sizeVar(fs, &f.storageLimit, "storage-limit", "`SIZE` of every stream and bucket together, e.g. 6GiB (default "+
		store.FormatSize(store.DefaultStorageLimit)+", "+store.FormatSize(store.DefaultMemoryStorageLimit)+
		" with --storage memory); split 8:4:2:4:2:2:2 (24ths) among tasks, card-events, dlq, pins, cards, cards-large, leases. "+
		"At a limit the oldest history is discarded, never a write refused")
	for i, m := range maxBytesFlags {
		sizeVar(fs, &f.maxBytes[i], "max-bytes-"+m.flag, "`SIZE` limit of "+m.what+" (default: its share of --storage-limit)")
	}
	fs.DurationVar(&f.checkInterval, "store-check-interval", store.DefaultMonitorInterval, "read every stream's size this often "+
		"(carddrift_store_bytes, carddrift_store_limit_bytes; a log line when one reaches its limit)")
	fs.DurationVar(&f.gcInterval, "cards-gc-interval", store.DefaultGCInterval, "sweep card bodies no pin or lease references this often")
	fs.DurationVar(&f.gcGrace, "cards-gc-grace", store.DefaultGCGrace, "keep every card body at least this long after it was stored")
}

// apply sets the byte limits of cfg (those left unset take their share of
// the storage limit in effect).
func (f *storageFlags) apply(cfg *store.Config) {
	cfg.StorageLimit = f.storageLimit
	for i, m := range maxBytesFlags {
		if v := f.maxBytes[i]; v != 0 {
			*m.field(cfg) = v
		}
	}
}

// start runs the store's monitor and card-body sweep until the returned
// stop is called (it waits for both to return).
func (f *storageFlags) start(ctx context.Context, svc *service.Service, log zerolog.Logger, reg prometheus.Registerer) (stop func(), err error) {
	mon, err := store.NewMonitor(svc.JetStream(), svc.Config(), store.MonitorOptions{Interval: f.checkInterval, Logger: &log, Registerer: reg})
	if err != nil {
		return nil, usageError{fmt.Errorf("--store-check-interval: %w", err)}
	}
	st := svc.Stores()
	gc, err := store.NewCardsGC(svc.JetStream(), st.Cards, store.GCOptions{
		References: store.PinLeaseReferences(st.Pins, func(p task.Pin) []string { return []string{p.Digest, p.LiveDigest} }, st.Leases),
		Interval:   f.gcInterval, Grace: f.gcGrace, Logger: &log, Registerer: reg,
	})
	if err != nil {
		return nil, usageError{fmt.Errorf("--cards-gc-interval, --cards-gc-grace: %w", err)}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{mon.Run, gc.Run} {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	return func() { cancel(); wg.Wait() }, nil
}

// register adds serve's flags.
func (f *serveFlags) register(fs *flag.FlagSet) {
	f.nats.register(fs)
	host, _ := os.Hostname()
	fs.StringVar(&f.dataDir, "data-dir", "carddrift-data", "embedded server: JetStream storage directory")
	fs.IntVar(&f.natsPort, "nats-port", 4222, "embedded server: client port on 127.0.0.1 (0: any free port)")
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:9464", "serve /metrics, /healthz, /readyz and the fleet at /fleet and /fleet.json here (empty: off)")
	fs.BoolVar(&f.pprof, "pprof", false, "also serve Go's profiler at /debug/pprof/ on --http-addr (diagnostics; keep the address private)")
	fs.StringVar(&f.name, "name", fmt.Sprintf("%s-%d", host, os.Getpid()), "worker name (CloudEvents source, lease holder); unique per process")
	f.cfg = store.DefaultConfig()
	fs.IntVar(&f.cfg.Partitions, "partitions", 8, "lifecycle stream partitions (per-task order across workers); fixed for the life of the stream")
	fs.IntVar(&f.cfg.Replicas, "replicas", 1, "replicas of every stream and bucket (3 for a 3-node cluster)")
	fs.StringVar(&f.storage, "storage", "file", "storage of streams and buckets: file or memory")
	fs.DurationVar(&f.cfg.AckWait, "ack-wait", topology.DefaultAckWait, "redeliver an event not acknowledged within this")
	fs.IntVar(&f.cfg.MaxDeliver, "max-deliver", topology.DefaultMaxDeliver, "deliveries before an event is dead-lettered")
	fs.DurationVar(&f.cfg.PinsTTL, "pins-ttl", store.DefaultPinsTTL, "expire a task's pin this long after its last write")
	fs.StringVar(&f.fetchAllow, "fetch-allow", "", "CIDR[,CIDR…] the SSRF guard lets fetches reach (loopback, private and link-local are refused by default)")
	fs.DurationVar(&f.fetch.TotalTimeout, "fetch-timeout", fetcher.DefaultTotalTimeout, "total time of one card fetch")
	fs.DurationVar(&f.fetch.ConnectTimeout, "fetch-connect-timeout", fetcher.DefaultConnectTimeout, "connect and TLS handshake time of one card fetch")
	fs.Int64Var(&f.fetch.MaxBodyBytes, "fetch-max-bytes", fetcher.DefaultMaxBodyBytes, "largest card body read")
	fs.DurationVar(&f.fetch.MinLease, "min-lease", fetcher.DefaultMinLease, "lower clamp of a card lease (Cache-Control max-age)")
	fs.DurationVar(&f.fetch.MaxLease, "max-lease", fetcher.DefaultMaxLease, "upper clamp of a card lease")
	fs.DurationVar(&f.fetch.DefaultLease, "default-lease", fetcher.DefaultDefaultLease, "lease of a card served without Cache-Control max-age (clamped like the others)")
	fs.DurationVar(&f.fetch.FullFetchInterval, "full-fetch-interval", fetcher.DefaultFullFetchInterval, "unconditional fetch at least this often (catches changes behind version-derived ETags)")
	registerHeartbeat(fs, &f.heartbeat)
	fs.IntVar(&f.fetch.PerHostConcurrency, "fetch-per-host", fetcher.DefaultPerHostConcurrency, "concurrent fetches per agent host")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", worker.DefaultDrainTimeout, "on SIGTERM, finish in-flight events within this")
	fs.DurationVar(&f.pinnedTTL, "pinned-ttl", worker.DefaultPinnedTTL, "a partition whose worker stopped pulling moves to another worker after this")
	fs.StringVar(&f.logFormat, "log-format", "auto", "json, console, or auto (console on a terminal)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	f.trust.register(fs)
	fs.StringVar(&f.agentCreds, "agent-credentials", "", `what to present to agents for their authenticated extended cards: a JSON file mapping `+
		`an agent origin (scheme://host[:port]) to {"headers": {"Name": "value", …}} or {"cert": PEM_FILE, "key": PEM_FILE} `+
		`(paths relative to the file); read again when it changes. Sent only to that origin, never printed`)
	f.storageFlags.register(fs)
	fs.BoolVar(&f.requireSig, "require-signed-cards", false, "signed fleets: a live card none of whose signatures verifies with a key "+
		"trusted for its agent (--jwks, --trust) is breaking drift for every task (signature-required): unsigned, unverifiable, "+
		"invalid, or signed with a key only its own jku vouches for")
	f.memBudget = budget.Default
	fs.Var(&f.memBudget, "memory-budget", "bytes the caches may hold (256MiB, 1GiB, …; at least 16MiB), split: "+
		"pins 25%, pinned cards 20%, live cards 10%, lifecycle events pulled or in flight 20%, signature results 25%; Go's soft memory limit is 1.5× it unless GOMEMLIMIT is set or the NATS server is embedded")
	fs.DurationVar(&f.startupTimeout, "startup-timeout", defaultStartupTimeout, "wait this long at start for a NATS cluster still forming "+
		"(no server yet, no JetStream leader, too few servers for --replicas), not ready meanwhile, then exit; 0: wait for ever. "+
		"A permanent error (a refused permission, a conflicting stream) exits at once")
	fs.DurationVar(&f.fetch.ConsistencyWindow, "consistency-window", fetcher.DefaultConsistencyWindow, "split brain: an agent whose live card alternates "+
		"between cards (A→B→A→B) within this window has replicas that disagree (card.inconsistent; its tasks' card.drift carry replicas-disagree)")
}

// defaultStartupTimeout is --startup-timeout's default: long enough for a
// cluster's rolling restart, short enough that a deployment that never
// forms ends in an exit an operator sees.
const defaultStartupTimeout = 5 * time.Minute

func newLogger(w io.Writer, format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), usagef("--log-level %q: want debug, info, warn or error", level)
	}
	switch format {
	case "auto":
		if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
		}
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: true}
	case "json":
	default:
		return zerolog.Nop(), usagef("--log-format %q: want json, console or auto", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

func (f *serveFlags) storeConfig() (store.Config, error) {
	cfg := f.cfg
	st, err := store.ParseStorage(f.storage)
	if err != nil {
		return cfg, usageError{err}
	}
	cfg.Storage = st
	f.storageFlags.apply(&cfg)
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// registerHeartbeat adds --observe-heartbeat (serve and demo).
func registerHeartbeat(fs *flag.FlagSet, p *time.Duration) {
	fs.DurationVar(p, "observe-heartbeat", fetcher.DefaultObserveHeartbeat, "publish a card.observed that says nothing new "+
		"at most this often per agent (changes of digest, signer or result are published at once; 0: every fetch, as contract v1.2)")
}

// heartbeat is fetcher.Options.ObserveHeartbeat of --observe-heartbeat d.
func heartbeat(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// fetchOptions reads the fetch and trust flags; skipped lists the keys of a
// --jwks file that cannot verify signatures.
func (f *serveFlags) fetchOptions() (o fetcher.Options, skipped []error, err error) {
	allow, err := fetcher.ParseAllow(f.fetchAllow)
	if err != nil {
		return fetcher.Options{}, nil, usageError{fmt.Errorf("--fetch-allow: %w", err)}
	}
	o = f.fetch
	o.Allow, o.ObserveHeartbeat = allow, heartbeat(f.heartbeat)
	if o.MinLease == 0 {
		o.MinLease = -1
	}
	if o.Signatures, skipped, err = f.trust.options(); err != nil {
		return fetcher.Options{}, nil, err
	}
	return o, skipped, nil // worker.New applies the defaults and validates
}

func (f *serveFlags) run(ctx context.Context, e *env) error {
	log, err := newLogger(e.stderr, f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	cfg, err := f.storeConfig()
	if err != nil {
		return err
	}
	fo, skipped, err := f.fetchOptions()
	if err != nil {
		return err
	}
	for _, err := range skipped {
		log.Warn().Err(err).Msg("--jwks/--trust: a key that cannot verify signatures is skipped")
	}
	if f.agentCreds != "" {
		creds, err := fetcher.OpenCredentials(f.agentCreds, fetcher.CredentialsFileOptions{OnReload: func(origins int, err error) {
			if err != nil {
				log.Error().Err(err).Msg("--agent-credentials: the file changed and does not parse; the previous credentials stay")
				return
			}
			log.Info().Int("origins", origins).Msg("--agent-credentials: read again")
		}})
		if err != nil {
			return usageError{fmt.Errorf("--agent-credentials: %w", err)}
		}
		fo.Credentials = creds
		log.Info().Int("origins", len(creds.Current().Origins())).Msg("--agent-credentials: extended cards are fetched for these agent origins")
	}
	if err := f.memBudget.Validate(); err != nil {
		return usageError{fmt.Errorf("--memory-budget: %w", err)}
	}
	shares := budget.Split(f.memBudget)
	// The signatures share: two thirds for the verified outcomes, a third
	// for the key sets fetched from signatures' jku.
	fo.Signatures.CacheBytes = int64(shares.Signatures) * 2 / 3
	fo.Signatures.JWKS.MaxBytes = int64(shares.Signatures) / 3
	switch {
	case os.Getenv("GOMEMLIMIT") != "":
	case f.nats.url == "":
		// The embedded server's memory is this process's too and grows with
		// the store and the rate, not with the budget: a limit from the
		// budget would have the collector run without pause.
		log.Info().Msg("memory budget: the NATS server is embedded, so Go's soft memory limit is not set from the budget (set GOMEMLIMIT for one)")
	default:
		// Restored on return (serve runs in-process in tests).
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(f.memBudget.GoMemoryLimit()))
		if os.Getenv("GOGC") == "" {
			// Under the limit, a collection per doubling of the live heap
			// (the pin cache's, mostly) marked it again for every 50 MB
			// allocated: 15% of serve's CPU in the 400-agent mix. The
			// limit still bounds the heap.
			defer debug.SetGCPercent(debug.SetGCPercent(serveGCPercent))
		}
	}
	if f.nats.url != "" && os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) == 2 {
		// serve's goroutines hand events to one another; with two Ps the
		// scheduler wakes and spins threads for each hand-off, beside a
		// NATS server on the same cores. One P: 16-30% less of serve's CPU
		// and 2-19% less of the server's in the 400-agent mix, the same
		// p99 (test/README.md). Restored on return (tests run serve
		// in-process).
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		log.Info().Msg("GOMAXPROCS 1 on a 2-CPU host (set GOMAXPROCS to choose)")
	}
	log.Info().Stringer("budget", f.memBudget).Stringer("pins", shares.Pins).Stringer("cards", shares.Cards).Stringer("liveCards", shares.LiveCards).
		Stringer("pull", shares.Pull).Stringer("signatures", shares.Signatures).
		Stringer("signatureResults", budget.Bytes(fo.Signatures.CacheBytes)).Stringer("jkuKeySets", budget.Bytes(fo.Signatures.JWKS.MaxBytes)).
		Msg("memory budget")

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	so := service.Options{
		Config: cfg, ConnName: "carddrift-serve " + f.name, Registerer: reg,
		Worker: worker.Options{
			Name: f.name, Fetch: fo, DrainTimeout: f.drainTimeout, PinnedTTL: f.pinnedTTL, Logger: log,
			RequireSignedCards: f.requireSig,
		},
		PinCache: servePinCache, PinCacheMaxAge: servePinCacheMaxAge, MemoryBudget: f.memBudget,
	}
	// /readyz answers from the start (service.Readiness).
	readiness := &service.Readiness{}
	so.Readiness = readiness
	var mux *http.ServeMux
	if f.httpAddr != "" {
		mux = http.NewServeMux()
		stopHTTP, err := f.serveStatus(mux, reg, readiness, log, e.stdout)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	if f.nats.url == "" {
		if err := os.MkdirAll(f.dataDir, 0o750); err != nil {
			return fmt.Errorf("--data-dir: %w", err)
		}
		so.DataDir, so.Port = f.dataDir, f.natsPort
	} else {
		// The cluster may not be up yet: the connection keeps trying and
		// Open waits for it (within --startup-timeout).
		o := f.nats.options("carddrift-serve " + f.name)
		o.WaitForServer = true
		nc, err := service.Connect(o)
		if err != nil {
			return usage(err)
		}
		defer nc.Close()
		so.Conn = nc
	}
	startedAt := time.Now()
	so.SetupTimeout = f.startupTimeout
	if f.startupTimeout <= 0 {
		so.SetupTimeout = -1 // no bound
	}
	svc, err := service.Open(ctx, so)
	if errors.Is(err, service.ErrInvalidOptions) {
		return usageError{err}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while it waited for the deployment
		}
		return err
	}
	defer svc.Close()
	if svc.Embedded() {
		fmt.Fprintf(e.stdout, "carddrift: embedded NATS JetStream listening on %s (data in %s)\n", svc.URL(), f.dataDir)
	}

	stopStorage, err := f.storageFlags.start(ctx, svc, log, reg)
	if err != nil {
		return err
	}
	defer stopStorage()

	// The fleet now: gauges on /metrics, the page at /fleet.
	fleet := fleetCollector(svc, f.fetch.ConsistencyWindow, fleetRefresh)
	reg.MustRegister(fleet)
	if mux != nil {
		mountFleet(mux, fleet, fleetRefresh)
	}

	// The rest of --startup-timeout bounds the consumers' creation.
	var within time.Duration
	if f.startupTimeout > 0 {
		within = max(f.startupTimeout-time.Since(startedAt), time.Second)
	}
	running, err := svc.Start(ctx, within)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it was ready
		}
		return err
	}
	fmt.Fprintf(e.stdout, "carddrift: worker %s consuming %s (%d partitions); publishing to %s\n",
		f.name, cfg.LifecycleStream, max(cfg.Partitions, 1), cfg.EventsStream)
	log.Info().Str("worker", f.name).Msg("ready")
	<-running.Done()
	log.Info().Msg("stopped")
	return running.Err()
}

// serveStatus serves /metrics, /healthz, /readyz (200 "ready", or 503 "not
// ready: " and why: readiness) and, when --pprof, the profiler on
// --http-addr, on mux (the fleet's pages are mounted later: mountFleet);
// stop shuts it down.
func (f *serveFlags) serveStatus(mux *http.ServeMux, reg *prometheus.Registry, readiness *service.Readiness, log zerolog.Logger, stdout io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", f.httpAddr)
	if err != nil {
		return nil, fmt.Errorf("--http-addr: %w", err)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if reason := readiness.NotReady(); reason != "" {
			http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if f.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	}
	fmt.Fprintf(stdout, "carddrift: metrics and health on http://%s/metrics /healthz /readyz; the fleet at /fleet and /fleet.json\n", ln.Addr())
	return serveHTTP(ln, mux, log), nil
}
