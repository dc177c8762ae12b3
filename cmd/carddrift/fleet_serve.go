package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/service"
)

// fleetRefresh is how often serve's /fleet page reloads itself; the census
// behind it and the fleet gauges is taken at most this often.
const fleetRefresh = 10 * time.Second

// fleetCollector is the census of a running service's stores and card
// stream: the gauges of /metrics and the data of /fleet and /fleet.json. Its
// pin counts, leases and last observations are a census.Tally's, so that
// each census reads only what was written since the last one.
func fleetCollector(svc *service.Service, window time.Duration) *census.Collector {
	st := svc.Stores()
	src := census.Source{Pins: st.Pins, Leases: st.Leases, Cards: st.Cards, JS: svc.JetStream(), Config: svc.Config(),
		Tally: census.NewTally(svc.JetStream(), st.Pins.KV(), census.TallyOptions{Leases: st.Leases.KV(), Events: svc.Config().EventsStream})}
	return census.NewCollector(func(ctx context.Context) (*census.Fleet, error) {
		return census.Take(ctx, src, census.Options{Window: window})
	}, fleetRefresh)
}

// mountFleet serves the fleet page at /fleet (refreshing itself) and its
// JSON at /fleet.json; both read-only (GET and HEAD).
func mountFleet(mux *http.ServeMux, col *census.Collector) {
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
		return fl.WriteHTML(w, fleetRefresh)
	}))
	mux.HandleFunc("/fleet.json", serve("application/json", (*census.Fleet).WriteJSON))
}
