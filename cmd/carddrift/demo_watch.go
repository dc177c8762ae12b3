package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

// errNotLoopback: the demo's pages have no credentials.
var errNotLoopback = errors.New("not a loopback address (the demo serves its pages on loopback only)")

// listenLoopback listens on addr, which must name a loopback host.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host != "localhost" {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("%q: %w", host, errNotLoopback)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%s: %w", ln.Addr(), errNotLoopback)
	}
	return ln, nil
}

// demoWatch serves the demo's /fleet, /fleet.json and /metrics while it runs.
type demoWatch struct {
	reg  *prometheus.Registry
	ln   net.Listener
	stop func() // set by start
}

// newDemoWatch listens on addr (nil when ""), before the service registers.
func newDemoWatch(addr string) (*demoWatch, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := listenLoopback(addr)
	if err != nil {
		return nil, usagef("--http-addr: %v", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &demoWatch{reg: reg, ln: ln}, nil
}

func (w *demoWatch) registerer() prometheus.Registerer {
	if w == nil {
		return nil
	}
	return w.reg
}

// start serves svc's pages as serve does and returns the fleet page's URL.
func (w *demoWatch) start(svc *service.Service, log zerolog.Logger) string {
	col := fleetCollector(svc, fetcher.DefaultConsistencyWindow, demoFleetRefresh)
	w.reg.MustRegister(col)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{Registry: w.reg}))
	mountFleet(mux, col, demoFleetRefresh)
	w.stop = serveHTTP(w.ln, mux, log)
	return "http://" + w.ln.Addr().String() + "/fleet"
}

// close stops serving; safe on a nil demoWatch, and more than once.
func (w *demoWatch) close() {
	if w == nil {
		return
	}
	if w.stop != nil {
		w.stop() // closes the listener
		w.stop = nil
	}
	w.ln.Close()
}

// writeReplayPage writes the replay page of the whole history to out.
func writeReplayPage(ctx context.Context, js jetstream.JetStream, cfg store.Config, cards store.Cards, out io.Writer) (int, error) {
	rd, err := replay.New(js, replay.Options{Config: cfg, Cards: cards})
	if err != nil {
		return 0, err
	}
	tl, err := rd.Timeline(ctx, replay.Query{})
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	if err := tl.WriteHTML(&buf); err != nil {
		return 0, err
	}
	return out.Write(buf.Bytes())
}

// fleetHint says where serve's /fleet page is, for simulate.
func fleetHint(ctx context.Context, metricsURL string) string {
	const how = "open /fleet on serve's --http-addr (default http://127.0.0.1:9464/fleet) to watch the fleet as carddrift sees it"
	u, err := url.Parse(metricsURL)
	if metricsURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return how
	}
	u.Path = strings.TrimSuffix(u.Path, "/metrics") + "/fleet"
	u.RawQuery, u.Fragment = "", ""
	page := u.String()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, page, nil)
	if err != nil {
		return how
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Sprintf("serve's fleet page is not reachable at %s (%v); %s", page, err, how)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("serve answers %d at %s; %s", resp.StatusCode, page, how)
	}
	return "the fleet as serve sees it: " + page
}

// How often the fleet page reloads itself and its census is taken at most.
const (
	fleetRefresh     = 10 * time.Second
	demoFleetRefresh = 2 * time.Second
)

// fleetCollector is the census behind the fleet gauges and pages; its Tally
// reads only what was written since the last.
func fleetCollector(svc *service.Service, window, refresh time.Duration) *census.Collector {
	st := svc.Stores()
	src := census.Source{Cards: st.Cards,
		Tally: census.NewTally(svc.JetStream(), st.Pins.KV(), census.TallyOptions{Leases: st.Leases.KV(), Events: svc.Config().EventsStream})}
	return census.NewCollector(func(ctx context.Context) (*census.Fleet, error) {
		return census.Take(ctx, src, census.Options{Window: window})
	}, refresh)
}

// mountFleet serves /fleet and /fleet.json, read-only (GET and HEAD).
func mountFleet(mux *http.ServeMux, col *census.Collector, refresh time.Duration) {
	serve := func(contentType string, render func(*census.Fleet, io.Writer) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "read-only", http.StatusMethodNotAllowed)
				return
			}
			fl, err := col.Fleet(r.Context())
			if fl == nil {
				http.Error(w, "no census of the fleet: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			var buf bytes.Buffer
			if err := render(fl, &buf); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "no-store")
			w.Write(buf.Bytes())
		}
	}
	mux.HandleFunc("/fleet", serve("text/html; charset=utf-8", func(fl *census.Fleet, w io.Writer) error {
		return fl.WriteHTML(w, refresh)
	}))
	mux.HandleFunc("/fleet.json", serve("application/json", (*census.Fleet).WriteJSON))
}

// serveHTTP serves h on ln in a goroutine it owns, until the returned stop
// shuts it down (at most 5s for requests in flight) and waits for it.
func serveHTTP(ln net.Listener, h http.Handler, log zerolog.Logger) (stop func()) {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("http server")
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		<-done
	}
}
