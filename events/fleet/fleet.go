package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/carddrift/carddrift/events/internal/defaults"
)

// Defaults: the fleet's size, the max-age of CacheStrong and CacheVersion
// agents, and how long Close waits for requests in flight.
const (
	DefaultAgents   = 40
	maxAge          = 2 * time.Second
	shutdownTimeout = 2 * time.Second
)

// Options configure a Fleet; the zero value is 40 agents, seed 0. The same
// seed builds the same fleet (up to the ports).
type Options struct {
	Agents int
	Seed   int64
}

// Validate reports options out of range, wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	if o.Agents < 0 {
		return fmt.Errorf("%w: Agents %d < 0", ErrInvalidOptions, o.Agents)
	}
	return nil
}

// Fleet is a set of simulated A2A agents, each with its own HTTP server on
// 127.0.0.1: New, Start, change cards with Agent methods or a Player, Close.
// Safe for concurrent use.
type Fleet struct {
	agents []*Agent

	wg sync.WaitGroup // one Serve goroutine per agent that is listening

	mu     sync.Mutex
	state  int // fleetNew, fleetStarted, fleetClosed
	closed chan struct{}
}

const (
	fleetNew = iota
	fleetStarted
	fleetClosed
)

// New builds a fleet without touching the network: every template appears
// once there are enough agents, every Caching from four agents on, and from
// two agents on exactly one (CacheStrong) varies its card by A2A-Version.
func New(opts Options) (*Fleet, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.Agents = defaults.Positive(opts.Agents, DefaultAgents)
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed_f1ee7))
	n := opts.Agents

	tmpls := make([]template, n)
	order := rng.Perm(len(templates))
	for i := range tmpls {
		tmpls[i] = templates[order[i%len(order)]]
	}
	rng.Shuffle(n, func(i, j int) { tmpls[i], tmpls[j] = tmpls[j], tmpls[i] })

	cachings := make([]Caching, n)
	for i := range cachings {
		cachings[i] = Caching(i % len(cachingNames))
	}
	rng.Shuffle(n, func(i, j int) { cachings[i], cachings[j] = cachings[j], cachings[i] })

	if n >= 2 {
		vary := rng.IntN(n)
		tmpls[vary] = varyTemplate
		cachings[vary] = CacheStrong
	}

	f := &Fleet{closed: make(chan struct{})}
	for i := range n {
		f.agents = append(f.agents, &Agent{
			index:   i,
			id:      fmt.Sprintf("agent-%02d", i),
			tmpl:    tmpls[i],
			caching: cachings[i],
			fleet:   f,
		})
	}
	return f, nil
}

// Agents returns a copy of the agents, in index order.
func (f *Fleet) Agents() []*Agent { return append([]*Agent(nil), f.agents...) }

// Start gives every agent a port on 127.0.0.1, points its card's interface
// URLs at it, and serves until Close; ctx bounds starting only. If an agent
// cannot listen, Start stops the others. A second Start returns ErrStarted,
// one after Close ErrClosed.
func (f *Fleet) Start(ctx context.Context) error {
	f.mu.Lock()
	switch f.state {
	case fleetStarted:
		f.mu.Unlock()
		return ErrStarted
	case fleetClosed:
		f.mu.Unlock()
		return ErrClosed
	}
	f.state = fleetStarted
	f.mu.Unlock()

	var lc net.ListenConfig
	for _, a := range f.agents {
		ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			_ = f.Close()
			return fmt.Errorf("fleet: %s listen: %w", a.id, err)
		}
		if err := a.init(ln.Addr().String()); err != nil {
			_ = ln.Close()
			_ = f.Close()
			return err
		}
		a.ctl.Lock()
		f.serveOn(a, ln)
		a.ctl.Unlock()
	}
	return nil
}

func (a *Agent) init(host string) error {
	base, err := renderTemplate(a.tmpl.Name, host)
	if err != nil {
		return err
	}
	a.host, a.base = host, base
	a.SetCard(base)
	if a.tmpl.Variant != "" {
		v, err := renderTemplate(a.tmpl.Variant, host)
		if err != nil {
			return err
		}
		a.variant = a.bodyOf(v)
	}
	return nil
}

// serveOn serves on ln in a goroutine the fleet owns, until the server is
// closed (SetOutage(Refused) or Close). a.ctl is held.
func (f *Fleet) serveOn(a *Agent, ln net.Listener) {
	srv := &http.Server{
		Handler:           a,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	done := make(chan struct{})
	a.srv, a.serveDone = srv, done
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer close(done)
		_ = srv.Serve(ln) // returns http.ErrServerClosed on Close/Shutdown
	}()
}

// Close shuts every server down, waiting up to 2s for requests in flight
// (then context.DeadlineExceeded: closed hard), and returns when every
// goroutine the fleet started has exited. Later calls return nil.
func (f *Fleet) Close() error {
	f.mu.Lock()
	if f.state == fleetClosed {
		f.mu.Unlock()
		return nil
	}
	f.state = fleetClosed
	close(f.closed)
	f.mu.Unlock()

	var srvs []*http.Server
	for _, a := range f.agents {
		a.ctl.Lock()
		if a.srv != nil {
			srvs = append(srvs, a.srv)
			a.srv = nil
		}
		a.ctl.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(srvs))
	for i, srv := range srvs {
		wg.Go(func() {
			if err := srv.Shutdown(ctx); err != nil {
				_ = srv.Close()
				errs[i] = err
			}
		})
	}
	wg.Wait()
	f.wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fleet: close: %w", err)
	}
	return nil
}
