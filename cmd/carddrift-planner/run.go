package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/peterbourgon/ff/v3"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
	"github.com/carddrift/carddrift/store/topology"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// options are the parsed flags.
type options struct {
	conn  service.ConnectOptions
	sub   planner.Options
	fetch fetcher.Options
	level zerolog.Level

	actions, minSeverity, source string
	dryRun, json                 bool
	limit                        int
	fetchAllow, agentCreds       string
	fetchTimeout, drainTimeout   time.Duration
	logLevel                     string
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{conn: service.ConnectOptions{Name: "carddrift-planner"}}
	fs := flag.NewFlagSet("carddrift-planner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.conn.URL, "nats-url", "nats://127.0.0.1:4222", "NATS server URL(s), comma-separated")
	fs.StringVar(&o.conn.Creds, "creds", "", "NATS credentials file")
	fs.StringVar(&o.conn.TLSCert, "tls-cert", "", "client certificate (PEM) for NATS TLS")
	fs.StringVar(&o.conn.TLSKey, "tls-key", "", "client key (PEM) for NATS TLS")
	fs.StringVar(&o.conn.TLSCA, "tls-ca", "", "CA bundle (PEM) to verify the NATS servers")
	fs.StringVar(&o.conn.APIPrefix, "js-api-prefix", "", "JetStream API prefix of an account that imports carddrift's JetStream (see deployments/README.md); empty: $JS.API")
	fs.StringVar(&o.sub.Durable, "durable", "carddrift-planner", "name of the planner's durable consumer (instances with one name share the work)")
	fs.StringVar(&o.sub.Agent, "agent", "", "only verdicts of this agent URL (any URL of its host)")
	fs.StringVar(&o.actions, "actions", "", "only these verdict actions, comma-separated: abort, replan, continue (default all)")
	fs.StringVar(&o.minSeverity, "min-severity", "", "only verdicts whose findings touching the task reach this severity: info, warning, breaking")
	fs.BoolVar(&o.sub.FromStart, "from-start", false, "a new durable starts at the beginning of the stream (default: verdicts from now on)")
	fs.StringVar(&o.sub.Stream, "stream", topology.DefaultEventsStream, "the stream of card.* events")
	fs.StringVar(&o.source, "source", "urn:carddrift:planner", "CloudEvents source of the a2a.task.submitted events the planner publishes")
	fs.BoolVar(&o.dryRun, "dry-run", false, "decide and print, but publish nothing")
	fs.BoolVar(&o.json, "json", false, "one JSON object per line instead of human lines")
	fs.IntVar(&o.limit, "limit", 0, "stop after handling this many verdicts (0: run until interrupted)")
	fs.StringVar(&o.fetchAllow, "fetch-allow", "", "CIDR[,CIDR...] the SSRF guard lets the card fetcher dial (as carddrift serve --fetch-allow)")
	fs.DurationVar(&o.fetchTimeout, "fetch-timeout", fetcher.DefaultTotalTimeout, "bound of one card fetch")
	fs.StringVar(&o.agentCreds, "agent-credentials", "", `what to present to agents for their authenticated extended cards, as carddrift serve --agent-credentials: `+
		`a JSON file mapping an agent origin (scheme://host[:port]) to {"headers": {"Name": "value", …}} or {"cert": PEM_FILE, "key": PEM_FILE}; `+
		`read again when it changes. Without a credential for its agent, a task that uses the extended card cannot be re-planned`)
	fs.DurationVar(&o.drainTimeout, "drain-timeout", 10*time.Second, "on stop, how long to finish the verdicts in hand")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level of stderr logs: debug, info, warn, error")
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix("CARDDRIFT")); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.actions != "" {
		for _, a := range strings.Split(o.actions, ",") {
			switch act := detector.Action(strings.TrimSpace(a)); act {
			case detector.Abort, detector.Replan, detector.Continue:
				o.sub.Actions = append(o.sub.Actions, act)
			default:
				return nil, fmt.Errorf("--actions: %q is not abort, replan or continue", a)
			}
		}
	}
	if o.minSeverity != "" {
		sev, err := detector.ParseSeverity(o.minSeverity)
		if err != nil {
			return nil, fmt.Errorf("--min-severity: %w", err)
		}
		o.sub.MinSeverity = sev
	}
	if o.sub.Agent != "" {
		if _, err := events.AgentKey(o.sub.Agent); err != nil {
			return nil, fmt.Errorf("--agent: %w", err)
		}
	}
	allow, err := fetcher.ParseAllow(o.fetchAllow)
	if err != nil {
		return nil, fmt.Errorf("--fetch-allow: %w", err)
	}
	if o.fetchTimeout <= 0 {
		return nil, errors.New("--fetch-timeout must be positive")
	}
	o.fetch = fetcher.Options{Allow: allow, TotalTimeout: o.fetchTimeout, ConnectTimeout: min(o.fetchTimeout, fetcher.DefaultConnectTimeout)}
	if o.limit < 0 {
		return nil, errors.New("--limit must not be negative")
	}
	if o.level, err = zerolog.ParseLevel(o.logLevel); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return o, nil
}

// run parses args, runs the planner until ctx ends or --limit is reached,
// and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "carddrift-planner:", err)
		}
		return exitUsage
	}
	log := zerolog.New(stderr).Level(o.level).With().Timestamp().Str("durable", o.sub.Durable).Logger()
	if o.agentCreds != "" {
		creds, err := fetcher.OpenCredentials(o.agentCreds, fetcher.CredentialsFileOptions{OnReload: func(origins int, err error) {
			if err != nil {
				log.Error().Err(err).Msg("--agent-credentials: the file changed and does not parse; the previous credentials stay")
				return
			}
			log.Info().Int("origins", origins).Msg("--agent-credentials: read again")
		}})
		if err != nil {
			fmt.Fprintln(stderr, "carddrift-planner: --agent-credentials:", err)
			return exitUsage
		}
		o.fetch.Credentials = creds
	}
	if err := serve(ctx, o, stdout, log); err != nil {
		fmt.Fprintln(stderr, "carddrift-planner:", err)
		return exitError
	}
	return exitOK
}

func serve(ctx context.Context, o *options, stdout io.Writer, log zerolog.Logger) error {
	nc, js, err := service.ConnectJetStream(o.conn)
	if err != nil {
		return err
	}
	defer nc.Close()
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	stores, err := store.Bind[task.Pin](bctx, js, store.DefaultConfig())
	cancel()
	if err != nil {
		return fmt.Errorf("bind the carddrift stores (is carddrift serve running?): %w", err)
	}
	o.fetch.Leases, o.fetch.Cards = stores.Leases, stores.Cards
	chk, err := planner.NewChecker(planner.CheckerOptions{Fetch: o.fetch})
	if err != nil {
		return err
	}
	defer chk.Close()
	em, err := client.NewEmitter(js, o.source, publish.WithLogger(log))
	if err != nil {
		return err
	}
	// Closed after the subscription's drain, before the connection.
	defer em.Close(context.WithoutCancel(ctx))
	o.sub.Pins, o.sub.Cards = stores.Pins, stores.Cards
	o.sub.OnError = func(err error) { log.Warn().Err(err).Msg("verdict not handed to the planner") }

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	p := &reference{
		checker: chk, emitter: em, pins: stores.Pins, out: stdout, json: o.json, dryRun: o.dryRun, log: log,
		limit: o.limit, done: stop,
	}
	// Not bound to runCtx: on stop it is drained.
	sub, err := planner.Subscribe(context.WithoutCancel(ctx), js, o.sub, p.handle)
	if err != nil {
		return err
	}
	log.Info().Str("stream", o.sub.Stream).Str("agent", o.sub.Agent).Msg("planner subscribed to card.drift")
	select {
	case <-runCtx.Done():
	case <-sub.Closed():
		return errors.New("subscription closed (NATS connection lost?)")
	}
	sub.Drain()
	select {
	case <-sub.Closed():
	case <-time.After(o.drainTimeout):
		sub.Stop()
		<-sub.Closed()
		log.Warn().Dur("drainTimeout", o.drainTimeout).Msg("drain timed out; unhandled verdicts will be redelivered")
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
