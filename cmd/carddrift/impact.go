package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/inspect/impact"
	"github.com/carddrift/carddrift/events/inspect/render"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/fetcher"
)

type impactFlags struct {
	stores storeFlags
	agent  string
	card   string
	json   bool
	failOn string
	signed bool
	ext    bool
}

func (f *impactFlags) register(fs *flag.FlagSet) {
	f.stores.register(fs, "read the pins offline")
	fs.StringVar(&f.agent, "agent", "", "the agent about to deploy the card (any URL of its host)")
	fs.StringVar(&f.card, "card", "", "the proposed card: a file, or - for stdin")
	fs.BoolVar(&f.json, "json", false, "print one JSON object {agentUrl, card{digest}, tasks[{taskId, action, posture, findings[{rule,severity,touches}]}], counts{abort,replan,continue}}")
	fs.StringVar(&f.failOn, "fail-on", "", "exit 1 when a task would abort (abort) or abort or re-plan (replan)")
	fs.BoolVar(&f.ext, "extended", false, "the proposed card is the agent's authenticated extended card: judge the tasks pinned on the extended card (without it, the public card: those tasks are listed as not judged)")
	fs.BoolVar(&f.signed, "require-signed-cards", false, "judge as a deployment that requires signed cards does (the card's signatures are not verified here: a signed card counts as unverified)")
}

func (f *impactFlags) run(ctx context.Context, e *env) error {
	if f.agent == "" || f.card == "" {
		return usagef("impact needs --agent URL and --card FILE|-")
	}
	if _, err := events.AgentHost(f.agent); err != nil {
		return usagef("--agent: %v", err)
	}
	switch f.failOn {
	case "", "abort", "replan":
	default:
		return usagef("--fail-on %q: want abort or replan", f.failOn)
	}
	if strings.HasPrefix(f.card, "http://") || strings.HasPrefix(f.card, "https://") {
		return usagef("--card is the proposed card, a file or -: not a URL")
	}
	src, err := readSource(ctx, e, f.card, nil)
	if err != nil {
		return err
	}
	if len(src.Raw) > cliMaxCardBytes {
		return usagef("--card %s: larger than %d bytes", f.card, cliMaxCardBytes)
	}
	st, err := f.stores.open(ctx, "carddrift-impact")
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := impact.Assess(ctx, impact.Source{Pins: st.stores.Pins, Cards: st.stores.Cards}, f.agent, src.Raw,
		impact.Options{RequireSigned: f.signed, Extended: f.ext})
	switch {
	case errors.Is(err, impact.ErrNotACard):
		return usageError{err}
	case errors.Is(err, store.ErrCorrupt):
		fmt.Fprintln(e.stderr, "carddrift:", err)
	case err != nil:
		return err
	}
	if err := printResult(e.stdout, f.json, rep, func(w io.Writer) { writeImpactText(w, rep) }); err != nil {
		return err
	}
	if (f.failOn == "abort" && rep.Counts.Abort > 0) || (f.failOn == "replan" && rep.Counts.Abort+rep.Counts.Replan > 0) {
		return exitError{exitFindings}
	}
	return nil
}

// writeImpactText prints the tasks, worst action first, with the findings
// that touch each, then the counts.
func writeImpactText(w io.Writer, rep *impact.Report) {
	kind := "card"
	if rep.Extended {
		kind = "extended card"
	}
	fmt.Fprintf(w, "impact of %s %s on %s: %d live task(s)", kind, rep.Card.Digest, rep.AgentURL, len(rep.Tasks))
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(w, " judged, %d not", len(rep.Skipped))
	}
	fmt.Fprint(w, "\n\n")
	order := []detector.Action{detector.Abort, detector.Replan, detector.Continue}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(rep.Tasks) > 0 {
		fmt.Fprintln(tw, "  ACTION\tTASK\tPOSTURE\tSKILL\tFINDINGS THAT TOUCH IT")
	}
	for _, a := range order {
		for _, t := range rep.Tasks {
			if t.Action != a {
				continue
			}
			var touching []string
			for _, f := range t.Findings {
				if f.Touches {
					touching = append(touching, fmt.Sprintf("%s (%s)", f.Rule, f.Severity))
				}
			}
			fs := strings.Join(touching, ", ")
			if fs == "" {
				fs = "none"
			}
			if other := len(t.Findings) - len(touching); other > 0 {
				fs += fmt.Sprintf(" (+%d that do not)", other)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", strings.ToUpper(string(t.Action)), t.TaskID, t.Posture, render.OrDash(t.Skill), fs)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n  abort %d, replan %d, continue %d\n", rep.Counts.Abort, rep.Counts.Replan, rep.Counts.Continue)
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(w, "\n  not judged: %d task(s)\n", len(rep.Skipped))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, s := range rep.Skipped {
			fmt.Fprintf(tw, "  %s\t%s\n", s.TaskID, s.Reason)
		}
		tw.Flush()
	}
}

type fleetFlags struct {
	stores storeFlags
	output outputFlags
	json   bool
	window time.Duration
}

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
