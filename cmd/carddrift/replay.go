package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
	"github.com/carddrift/carddrift/store"
)

type replayFlags struct {
	stores     storeFlags
	task       string
	agent      string
	since      string
	until      string
	output     outputFlags
	cards      bool
	reevaluate bool
	posture    string
	rules      string
}

func (f *replayFlags) register(fs *flag.FlagSet) {
	f.stores.register(fs, "replay offline")
	fs.StringVar(&f.task, "task", "", "only this task: its lifecycle, pins, verdicts, and its agent's card while it ran")
	fs.StringVar(&f.agent, "agent", "", "only this agent (any URL of its host) and its tasks")
	fs.StringVar(&f.since, "since", "", "only entries at or after this time: RFC 3339, or a duration ago (15m)")
	fs.StringVar(&f.until, "until", "", "only entries at or before this time: RFC 3339, or a duration ago")
	f.output.register(fs, "text (a table), json (one object per line) or html (one self-contained page)")
	fs.BoolVar(&f.cards, "cards", false, "with --agent: every card version of the agent, first and last seen, and the changelog")
	fs.BoolVar(&f.reevaluate, "reevaluate", false, "re-run the detector over the recorded verdicts and list those that would differ")
	fs.StringVar(&f.posture, "posture", "", "with --reevaluate: judge every task under this posture (fail-closed or degrade) instead of its own")
	fs.StringVar(&f.rules, "rules", "", `with --reevaluate: a JSON rules file {"disable":[rule ids],"severity":{rule id: "info"|"warning"|"breaking"}}`)
}

func (f *replayFlags) plan(now time.Time) (q replay.Query, re replay.Reevaluation, err error) {
	q = replay.Query{TaskID: f.task, AgentURL: f.agent}
	if f.since != "" {
		if q.Since, err = replay.ParseTime(f.since, now); err != nil {
			return q, re, usagef("--since: %v", err)
		}
	}
	if f.until != "" {
		if q.Until, err = replay.ParseTime(f.until, now); err != nil {
			return q, re, usagef("--until: %v", err)
		}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since) {
		return q, re, usagef("--until is before --since")
	}
	if err := f.output.check(); err != nil {
		return q, re, err
	}
	if f.output.format == "html" && f.reevaluate {
		return q, re, usagef("--reevaluate prints text or json, not html")
	}
	if f.cards {
		if f.agent == "" {
			return q, re, usagef("--cards needs --agent URL")
		}
		if f.reevaluate {
			return q, re, usagef("--cards and --reevaluate are exclusive")
		}
	}
	if !f.reevaluate && (f.posture != "" || f.rules != "") {
		return q, re, usagef("--posture and --rules go with --reevaluate")
	}
	if f.posture != "" {
		ps, err := detector.ParsePosture(f.posture)
		if err != nil {
			return q, re, usagef("--posture: %v", err)
		}
		re.Posture = ps
	}
	if f.rules != "" {
		file, err := os.Open(f.rules)
		if err != nil {
			return q, re, usagef("--rules: %v", err)
		}
		defer file.Close()
		if re.Rules, err = detector.ParseRuleSet(file); err != nil {
			return q, re, usagef("--rules %s: %v", f.rules, err)
		}
	}
	if f.agent != "" {
		if _, err := events.AgentKey(f.agent); err != nil {
			return q, re, usagef("--agent: %v", err)
		}
	}
	return q, re, nil
}

func (f *replayFlags) run(ctx context.Context, e *env) error {
	q, re, err := f.plan(time.Now())
	if err != nil {
		return err
	}
	f.stores.copy = replayCopy(q)
	src, err := f.stores.open(ctx, "carddrift-replay")
	if err != nil {
		return err
	}
	defer src.Close()
	rd, err := replay.New(src.js, replay.Options{Cards: src.stores.Cards})
	if err != nil {
		return err
	}

	switch {
	case f.cards:
		h, err := rd.Cards(ctx, f.agent, q)
		if err != nil {
			return replayErr(err)
		}
		warnSkipped(e.stderr, h.Skipped)
		return writeReport(e, &f.output, h.WriteJSON, h.WriteHTML, h.WriteText)
	case f.reevaluate:
		rep, err := rd.Reevaluate(ctx, q, re)
		if err != nil {
			return replayErr(err)
		}
		return writeReport(e, &f.output, rep.WriteJSON, nil, rep.WriteText) // plan refuses html
	case f.output.format != "html":
		return f.stream(ctx, e, rd, q)
	default:
		tl, err := rd.Capped(ctx, q, replay.DefaultCap)
		if err != nil {
			return replayErr(err)
		}
		warnSkipped(e.stderr, tl.Skipped)
		tl.Rest = f.restCommand()
		fmt.Fprintf(e.stderr, "carddrift replay: %d entries drawn of %d in the answer; read %d message(s)\n", len(tl.Entries), len(tl.Entries)+tl.Omitted, tl.Read)
		return writeReport(e, &f.output, nil, tl.WriteHTML, nil) // text and json stream
	}
}

// stream writes the timeline as it reads it, then says what it read (on
// stderr for JSON or --out).
func (f *replayFlags) stream(ctx context.Context, e *env, rd *replay.Reader, q replay.Query) (err error) {
	out := e.stdout
	if f.output.out != "" && f.output.out != "-" {
		file, err := os.Create(f.output.out)
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		defer func() {
			if cerr := file.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("--out: %w", cerr)
			}
		}()
		out = file
	}
	sw := replay.NewStreamWriter(out, q, f.output.format == "json")
	sum, err := rd.Stream(ctx, q, sw.Write)
	if err != nil {
		sw.Close(nil)
		return replayErr(err)
	}
	if err := sw.Close(sum); err != nil {
		return err
	}
	warnSkipped(e.stderr, sum.Skipped)
	if n := sum.SkippedCount - len(sum.Skipped); n > 0 {
		fmt.Fprintf(e.stderr, "carddrift: and %d more undecodable message(s)\n", n)
	}
	if f.output.format == "json" || out != e.stdout {
		fmt.Fprintln(e.stderr, replay.SummaryLine(sum))
	}
	return nil
}

// restCommand prints every entry of the query: what a capped page points to.
func (f *replayFlags) restCommand() string {
	args := []string{"carddrift", "replay"}
	add := func(flag, v string) {
		if v != "" {
			args = append(args, flag, strconv.Quote(v))
		}
	}
	add("--nats-url", f.stores.nats.url)
	add("--data-dir", f.stores.dataDir)
	add("--task", f.task)
	add("--agent", f.agent)
	add("--since", f.since)
	add("--until", f.until)
	return strings.Join(append(args, "--format", "json"), " ")
}

// replayCopy is what replay needs of a store directory: the two event
// streams within the query's times, the card bodies, and the other
// buckets' configuration only (store.Bind binds them).
func replayCopy(q replay.Query) offlineCopy {
	cfg := store.DefaultConfig()
	cfg.SetDefaults()
	life, card := replay.Ranges(q, replay.Options{})
	return offlineCopy{
		empty:       map[string]bool{"KV_" + cfg.PinsBucket: true, "KV_" + cfg.LeasesBucket: true, cfg.DLQStream: true},
		noConsumers: true,
		ranges:      map[string]replay.Range{cfg.LifecycleStream: life, cfg.EventsStream: card},
	}
}

func replayErr(err error) error {
	if errors.Is(err, replay.ErrInvalidQuery) {
		return usageError{err}
	}
	return err
}

func warnSkipped(w io.Writer, skipped []replay.Skipped) {
	for _, s := range skipped {
		fmt.Fprintf(w, "carddrift: skipped undecodable message %s/%d on %s: %s\n", s.Stream, s.Seq, s.Subject, s.Reason)
	}
}
