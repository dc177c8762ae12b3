package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/replay"
	"github.com/carddrift/carddrift/store"
)

type replayFlags struct {
	nats       natsFlags
	dataDir    string
	task       string
	agent      string
	since      string
	until      string
	format     string
	out        string
	cards      bool
	reevaluate bool
	posture    string
	rules      string
}

func replayCommand(e *env) *ffcli.Command {
	var f replayFlags
	fs := newFlagSet("replay", e)
	f.nats.register(fs)
	fs.StringVar(&f.dataDir, "data-dir", "", "replay offline from this store directory (the one `serve` or `demo --data-dir` wrote); it is copied first and never changed")
	fs.StringVar(&f.task, "task", "", "only this task: its lifecycle, pins, verdicts, and its agent's card while it ran")
	fs.StringVar(&f.agent, "agent", "", "only this agent (any URL of its host) and its tasks")
	fs.StringVar(&f.since, "since", "", "only entries at or after this time: RFC 3339, or a duration ago (15m)")
	fs.StringVar(&f.until, "until", "", "only entries at or before this time: RFC 3339, or a duration ago")
	fs.StringVar(&f.format, "format", "text", "text (a table), json (one object per line) or html (one self-contained page)")
	fs.StringVar(&f.out, "out", "", "write the output to this file instead of stdout")
	fs.BoolVar(&f.cards, "cards", false, "with --agent: every card version of the agent, first and last seen, and the changelog")
	fs.BoolVar(&f.reevaluate, "reevaluate", false, "re-run the detector over the recorded verdicts and list those that would differ")
	fs.StringVar(&f.posture, "posture", "", "with --reevaluate: judge every task under this posture (fail-closed or degrade) instead of its own")
	fs.StringVar(&f.rules, "rules", "", `with --reevaluate: a JSON rules file {"disable":[rule ids],"severity":{rule id: "info"|"warning"|"breaking"}}`)
	return &ffcli.Command{
		Name:       "replay",
		ShortUsage: "carddrift replay [--nats-url URL | --data-dir DIR] [--task ID] [--agent URL] [--since T] [--until T] [flags]",
		ShortHelp:  "forensic timeline from stream history; card history; re-evaluation under another posture or rule set",
		LongHelp: "Reads the lifecycle and card event streams with ordered consumers (never a durable one; the\n" +
			"workers are not disturbed), up to their last message at the start, and merges them into a\n" +
			"timeline: lifecycle events, pins, card observations, verdicts and unreachable fetches, with\n" +
			"their digests and, between card versions, the findings over the recorded card bodies (never\n" +
			"fetched). The text format ends with each task's story: the card it was planned against, the\n" +
			"card live when it failed, and what changed.\n\n" +
			"--format json prints one object per line with time, kind (lifecycle, pin, observation,\n" +
			"verdict, unreachable), type, taskId, agentUrl, digests, data and change; with --cards one\n" +
			"object per card version; with --reevaluate one object per differing verdict.\n\n" +
			"Source: --nats-url for a live deployment (default nats://127.0.0.1:4222), or --data-dir DIR\n" +
			"offline: DIR is copied to a temporary directory and opened there by an embedded server that\n" +
			"accepts no network connections.",
		FlagSet: fs,
		Exec: noArgs("replay", func(ctx context.Context) error {
			return runReplay(ctx, e, &f)
		}),
	}
}

// replayPlan is the validated command line.
type replayPlan struct {
	query replay.Query
	re    replay.Reevaluation
}

func (f *replayFlags) plan(now time.Time) (*replayPlan, error) {
	p := &replayPlan{query: replay.Query{TaskID: f.task, AgentURL: f.agent}}
	var err error
	if f.since != "" {
		if p.query.Since, err = replay.ParseTime(f.since, now); err != nil {
			return nil, usagef("--since: %v", err)
		}
	}
	if f.until != "" {
		if p.query.Until, err = replay.ParseTime(f.until, now); err != nil {
			return nil, usagef("--until: %v", err)
		}
	}
	if !p.query.Since.IsZero() && !p.query.Until.IsZero() && p.query.Until.Before(p.query.Since) {
		return nil, usagef("--until is before --since")
	}
	switch f.format {
	case "text", "json":
	case "html":
		if f.reevaluate {
			return nil, usagef("--reevaluate prints text or json, not html")
		}
	default:
		return nil, usagef("--format %q: want text, json or html", f.format)
	}
	if f.nats.url != "" && f.dataDir != "" {
		return nil, usagef("--nats-url and --data-dir are exclusive: replay a live deployment or a store directory")
	}
	if f.cards {
		if f.agent == "" {
			return nil, usagef("--cards needs --agent URL")
		}
		if f.reevaluate {
			return nil, usagef("--cards and --reevaluate are exclusive")
		}
	}
	if !f.reevaluate && (f.posture != "" || f.rules != "") {
		return nil, usagef("--posture and --rules go with --reevaluate")
	}
	if f.posture != "" {
		ps, err := detector.ParsePosture(f.posture)
		if err != nil {
			return nil, usagef("--posture: %v", err)
		}
		p.re.Posture = ps
	}
	if f.rules != "" {
		file, err := os.Open(f.rules)
		if err != nil {
			return nil, usagef("--rules: %v", err)
		}
		defer file.Close()
		if p.re.Rules, err = replay.ParseRules(file); err != nil {
			return nil, usagef("--rules %s: %v", f.rules, err)
		}
	}
	if f.agent != "" {
		if _, err := events.AgentKey(f.agent); err != nil {
			return nil, usagef("--agent: %v", err)
		}
	}
	return p, nil
}

func runReplay(ctx context.Context, e *env, f *replayFlags) error {
	p, err := f.plan(time.Now())
	if err != nil {
		return err
	}
	src, err := openReplaySource(ctx, e, f)
	if err != nil {
		return err
	}
	defer src.Close()
	rd, err := replay.New(src.js, replay.Options{Cards: src.cards})
	if err != nil {
		return err
	}

	var buf bytes.Buffer
	switch {
	case f.cards:
		h, err := rd.Cards(ctx, f.agent, p.query)
		if err != nil {
			return replayErr(err)
		}
		warnSkipped(e.stderr, h.Skipped)
		switch f.format {
		case "json":
			err = writeCardsJSON(&buf, h)
		case "html":
			err = writeCardsHTML(&buf, h)
		default:
			writeCardsText(&buf, h)
		}
		if err != nil {
			return err
		}
	case f.reevaluate:
		rep, err := rd.Reevaluate(ctx, p.query, p.re)
		if err != nil {
			return replayErr(err)
		}
		if f.format == "json" {
			err = writeReevalJSON(&buf, rep)
		} else {
			writeReevalText(&buf, rep)
		}
		if err != nil {
			return err
		}
	default:
		tl, err := rd.Timeline(ctx, p.query)
		if err != nil {
			return replayErr(err)
		}
		warnSkipped(e.stderr, tl.Skipped)
		switch f.format {
		case "json":
			err = writeTimelineJSON(&buf, tl)
		case "html":
			err = writeTimelineHTML(&buf, tl)
		default:
			writeTimelineText(&buf, tl)
		}
		if err != nil {
			return err
		}
	}
	return writeOut(e, f.out, buf.Bytes())
}

// replayErr marks query errors as usage errors.
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

// writeOut writes b to stdout, or to the file out.
func writeOut(e *env, out string, b []byte) error {
	if out == "" || out == "-" {
		_, err := e.stdout.Write(b)
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(e.stderr, "carddrift: wrote %s (%d bytes)\n", out, len(b))
	return nil
}

// replaySource is an open connection to the history: a live deployment, or
// an embedded server on a copy of a store directory.
type replaySource struct {
	js    jetstream.JetStream
	cards store.Cards
	close []func()
}

func (s *replaySource) Close() {
	for i := len(s.close) - 1; i >= 0; i-- {
		s.close[i]()
	}
}

func openReplaySource(ctx context.Context, _ *env, f *replayFlags) (*replaySource, error) {
	st, err := openStores(ctx, f.nats, f.dataDir, "carddrift-replay")
	if err != nil {
		return nil, err
	}
	return &replaySource{js: st.js, cards: st.stores.Cards, close: []func(){st.Close}}, nil
}
