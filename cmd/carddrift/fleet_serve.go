package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/service"
)

// fleetRefresh is how often serve's /fleet page reloads itself; the census
// behind it and the fleet gauges is taken at most this often. The demo's
// page refreshes every demoFleetRefresh, for a run that lasts seconds.
const (
	fleetRefresh     = 10 * time.Second
	demoFleetRefresh = 2 * time.Second
)

// fleetCollector is the census of a running service's stores and card
// stream: the gauges of /metrics and the data of /fleet and /fleet.json,
// taken at most every refresh through one census.Tally.
func fleetCollector(svc *service.Service, window, refresh time.Duration) *census.Collector {
	st := svc.Stores()
	src := census.Source{Cards: st.Cards,
		Tally: census.NewTally(svc.JetStream(), st.Pins.KV(), census.TallyOptions{Leases: st.Leases.KV(), Events: svc.Config().EventsStream})}
	return census.NewCollector(func(ctx context.Context) (*census.Fleet, error) {
		return census.Take(ctx, src, census.Options{Window: window})
	}, refresh)
}

// mountFleet serves the fleet page at /fleet (reloading itself every
// refresh) and its JSON at /fleet.json; both read-only (GET and HEAD).
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

// statusMux serves the metrics of reg at /metrics and the fleet of col at
// /fleet and /fleet.json (mountFleet): what serve and demo both offer.
func statusMux(reg *prometheus.Registry, col *census.Collector, refresh time.Duration) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mountFleet(mux, col, refresh)
	return mux
}

// serveHTTP serves h on ln in a goroutine it owns, until the returned stop
// shuts the server down (waiting at most 5s for requests in flight) and
// waits for it. Errors other than the shutdown are logged.
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
