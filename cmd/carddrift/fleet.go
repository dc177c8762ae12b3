package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/carddrift/carddrift/events/inspect/census"
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
	fl, err := census.Take(ctx, census.Source{Pins: st.stores.Pins, Leases: st.stores.Leases, Cards: st.stores.Cards, JS: st.js},
		census.Options{Window: f.window})
	if err != nil {
		return err
	}
	for _, p := range fl.Problems {
		fmt.Fprintln(e.stderr, "carddrift:", p)
	}
	asHTML := func(w io.Writer, fl *census.Fleet) error { return writeFleetHTML(w, fl, 0) }
	return writeReport(e, &f.output, fl, writeFleetJSON, asHTML, writeFleetText)
}

func writeFleetJSON(w io.Writer, fl *census.Fleet) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(fl)
}

// agentState says what is wrong with an agent, for people: "ok",
// "unreachable since …", "split brain since … (N cards)".
func agentState(a census.Agent) string {
	var parts []string
	if a.SplitBrain != nil {
		parts = append(parts, fmt.Sprintf("split brain since %s (%d cards)", fmtClock(a.SplitBrain.Since), len(a.SplitBrain.Digests)))
	}
	if a.UnreachableSince != nil {
		parts = append(parts, fmt.Sprintf("unreachable since %s (%s)", fmtClock(*a.UnreachableSince), a.Unreachable))
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, "; ")
}

func fmtClock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05")
}

// tasksText is an agent's pins per card version: "3 live, 2 on 1.0.0 (ab12…)".
func tasksText(a census.Agent) string {
	if len(a.Tasks) == 0 {
		return "-"
	}
	var parts []string
	for _, t := range a.Tasks {
		switch {
		case t.Live:
			parts = append(parts, fmt.Sprintf("%d on live", t.Count))
		case t.Digest == "":
			parts = append(parts, fmt.Sprintf("%d pending", t.Count))
		default:
			parts = append(parts, fmt.Sprintf("%d on %s (%s)", t.Count, orDash(t.Version), shortDigest(t.Digest)))
		}
	}
	return strings.Join(parts, ", ")
}

func writeFleetText(w io.Writer, fl *census.Fleet) {
	unreachable := 0
	for _, a := range fl.Agents {
		if a.UnreachableSince != nil {
			unreachable++
		}
	}
	fmt.Fprintf(w, "fleet at %s: %d agent(s), %d in split brain, %d unreachable; %d shared skill(s), %d inconsistent (window %s)\n\n",
		fl.Taken.UTC().Format(time.RFC3339), len(fl.Agents), fl.SplitBrains(), unreachable, len(fl.Skills), fl.InconsistentSkills(), fl.Window)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  AGENT\tVERSION\tPROTOCOL\tLIVE\tCHANGED\tTASKS PER CARD VERSION\tSTATE")
	for _, a := range fl.Agents {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.AgentURL, orDash(a.Version), orDash(strings.Join(a.ProtocolVersions, ",")),
			shortDigest(a.Digest), fmtClock(a.LastChange), tasksText(a), agentState(a))
	}
	tw.Flush()
	if len(fl.Skills) == 0 {
		fmt.Fprintln(w, "\n  no skill id is offered by more than one agent")
		return
	}
	fmt.Fprintln(w, "\nskills offered by more than one agent")
	for _, s := range fl.Skills {
		state := "consistent"
		if !s.Consistent {
			state = "INCONSISTENT"
		}
		fmt.Fprintf(w, "  %-28s %2d agents  %s\n", s.ID, len(s.Agents), state)
		for _, d := range s.Differences {
			var vals []string
			for _, a := range s.Agents {
				vals = append(vals, fmt.Sprintf("%s %s", a, valueText(d.Values[a])))
			}
			sort.Strings(vals)
			fmt.Fprintf(w, "      %-18s %s\n", d.Field, strings.Join(vals, "; "))
		}
	}
}

// valueText renders a contract value: a list as [a b], a bool as on/off.
func valueText(v any) string {
	switch v := v.(type) {
	case []string:
		return "[" + strings.Join(v, " ") + "]"
	case bool:
		if v {
			return "on"
		}
		return "off"
	case nil:
		return "-"
	}
	return fmt.Sprint(v)
}
