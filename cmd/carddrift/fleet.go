package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

type fleetFlags struct {
	stores storeFlags
	output outputFlags
	json   bool
	window time.Duration
}

// register adds fleet's flags.
func (f *fleetFlags) register(fs *flag.FlagSet) {
	f.stores.register(fs, "read offline")
	f.output.register(fs, "text, json or html (one self-contained page)")
	fs.BoolVar(&f.json, "json", false, "same as --format json: {agents[{agentUrl, digest, version, protocolVersions, tasks, splitBrain, unreachableSince}], skills[{id, agents[], consistent, differences[]}]}")
	fs.DurationVar(&f.window, "consistency-window", fetcher.DefaultConsistencyWindow, "judge split brain over this window (the workers' --consistency-window)")
}

func (f *fleetFlags) run(ctx context.Context, e *env) error {
	if f.json {
		if f.output.format != "text" && f.output.format != "json" {
			return usagef("--json and --format %s disagree", f.output.format)
		}
		f.output.format = "json"
	}
	if err := f.output.check(); err != nil {
		return err
	}
	if f.window <= 0 {
		return usagef("--consistency-window must be positive")
	}
	st, err := f.stores.open(ctx, "carddrift-fleet")
	if err != nil {
		return err
	}
	defer st.Close()
	tally := census.NewTally(st.js, st.stores.Pins.KV(), census.TallyOptions{Leases: st.stores.Leases.KV(), Events: store.DefaultConfig().EventsStream})
	fl, err := census.Take(ctx, census.Source{Tally: tally, Cards: st.stores.Cards}, census.Options{Window: f.window})
	if err != nil {
		return err
	}
	for _, p := range fl.Problems {
		fmt.Fprintln(e.stderr, "carddrift:", p)
	}
	asHTML := func(w io.Writer) error { return fl.WriteHTML(w, 0) } // no refresh: a file
	return writeReport(e, &f.output, fl.WriteJSON, asHTML, fl.WriteText)
}
