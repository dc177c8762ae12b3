package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store/topology"
)

type watchFlags struct {
	nats      natsFlags
	stream    string
	all       bool
	agent     string
	task      string
	action    string
	rule      string
	json      bool
	fromStart bool
	limit     int
}

func (f *watchFlags) register(fs *flag.FlagSet) {
	f.nats.registerClient(fs)
	fs.StringVar(&f.stream, "stream", topology.DefaultEventsStream, "the stream of card.* events")
	fs.BoolVar(&f.all, "all", false, "every card.* event, not only card.drift")
	fs.StringVar(&f.agent, "agent", "", "only events of this agent URL (any URL of the host)")
	fs.StringVar(&f.task, "task", "", "only events of this task id")
	fs.StringVar(&f.action, "action", "", "only card.drift with this verdict action: abort, replan or continue")
	fs.StringVar(&f.rule, "rule", "", "only card.drift with a finding of this rule id")
	fs.BoolVar(&f.json, "json", false, "one JSON object per line (the CloudEvent) instead of human lines")
	fs.BoolVar(&f.fromStart, "from-start", false, "replay the stream's history first, then tail")
	fs.IntVar(&f.limit, "limit", 0, "stop after this many matching events (0: run until interrupted)")
}

func (f *watchFlags) filters() ([]string, error) {
	typ := "drift"
	if f.all {
		typ = "*"
	}
	if f.agent != "" {
		key, err := events.AgentKey(f.agent)
		if err != nil {
			return nil, usageError{fmt.Errorf("--agent: %w", err)}
		}
		if f.task != "" {
			return []string{"card." + typ + "." + key + "." + events.Token(f.task)}, nil
		}
		return []string{"card." + typ + "." + key, "card." + typ + "." + key + ".*"}, nil
	}
	if f.task != "" {
		return []string{"card." + typ + ".*." + events.Token(f.task)}, nil
	}
	return []string{"card." + typ + ".>"}, nil
}

func (f *watchFlags) match(ev events.Event) bool {
	if f.action == "" && f.rule == "" {
		return true
	}
	d, ok := ev.Data.(events.Drift)
	if !ok {
		return false
	}
	if f.action != "" && string(d.Verdict.Action) != f.action {
		return false
	}
	return f.rule == "" || slices.ContainsFunc(d.Findings, func(fd detector.Finding) bool { return fd.Rule == f.rule })
}

func (f *watchFlags) run(ctx context.Context, e *env) error {
	switch detector.Action(f.action) {
	case "", detector.Abort, detector.Replan, detector.Continue:
	default:
		return usagef("--action %q: want abort, replan or continue", f.action)
	}
	if f.rule != "" {
		if _, ok := detector.RuleByID(f.rule); !ok {
			return usagef("--rule %q: not a rule id", f.rule)
		}
	}
	filters, err := f.filters()
	if err != nil {
		return err
	}
	nc, js, err := f.nats.jetStream("carddrift-watch")
	if err != nil {
		return err
	}
	defer nc.Close()
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: filters, DeliverPolicy: jetstream.DeliverNewPolicy}
	if f.fromStart {
		occ.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	cons, err := js.OrderedConsumer(sctx, f.stream, occ)
	cancel()
	if err != nil {
		return fmt.Errorf("watch %s: %w", f.stream, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	// Canceling ctx stops the iterator, which ends Next.
	unhook := context.AfterFunc(ctx, it.Stop)
	defer unhook()
	n := 0
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		ev, err := events.Decode(msg)
		if err != nil {
			fmt.Fprintf(e.stderr, "carddrift: skipping undecodable event on %s: %v\n", msg.Subject(), err)
			continue
		}
		if !f.match(ev) {
			continue
		}
		if f.json {
			if err := writeEventJSON(e.stdout, ev); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(e.stdout, humanLine(ev))
		}
		n++
		if f.limit > 0 && n >= f.limit {
			return nil
		}
	}
}

func writeEventJSON(w io.Writer, ev events.Event) error {
	ce, err := events.CloudEvent(ev)
	if err != nil {
		return err
	}
	b, err := json.Marshal(ce)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func humanLine(ev events.Event) string {
	ts := ev.Time.UTC().Format(time.RFC3339)
	short := func(d string) string { return d[:min(len(d), 19)] }
	switch d := ev.Data.(type) {
	case events.Drift:
		signers := ""
		if d.Pinned.Signer != nil || d.Live.Signer != nil {
			signers = fmt.Sprintf("  signer=%s→%s", signerName(d.Pinned.Signer), signerName(d.Live.Signer))
		}
		return fmt.Sprintf("%s  %-8s task=%s agent=%s  %s → %s%s  [%s]  %s", ts, strings.ToUpper(string(d.Verdict.Action)),
			d.TaskID, d.AgentURL, short(d.Pinned.Digest), short(d.Live.Digest), signers, strings.Join(detector.RuleIDs(d.Findings), ","), d.Verdict.Reason)
	case events.Pinned:
		signer := ""
		if d.Signer != nil {
			signer = "  signer=" + signerName(d.Signer)
		}
		if d.Extended != "" {
			signer += "  extended=" + d.Extended
		}
		return fmt.Sprintf("%s  PINNED   task=%s agent=%s  %s  (%s)%s", ts, d.TaskID, d.AgentURL, short(d.Digest), d.Source, signer)
	case events.Observed:
		since := ""
		if d.Fetches > 1 { // since contract v1.3: the fetches since the last card.observed
			since = fmt.Sprintf("  fetches=%d since=%s", d.Fetches, d.Since.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("%s  OBSERVED agent=%s  %s  %d  %dms%s", ts, d.AgentURL, short(d.Digest), d.Status, d.LatencyMs, since)
	case events.Unreachable:
		return fmt.Sprintf("%s  UNREACH  task=%s agent=%s  %s: %s", ts, d.TaskID, d.AgentURL, d.Reason, d.Detail)
	case events.Inconsistent:
		cards := make([]string, 0, len(d.Digests))
		for _, s := range d.Digests {
			cards = append(cards, fmt.Sprintf("%s×%d", short(s.Digest), s.Count))
		}
		return fmt.Sprintf("%s  SPLIT    agent=%s  replicas disagree within %s: %s", ts, d.AgentURL, time.Duration(d.Window), strings.Join(cards, " "))
	}
	return fmt.Sprintf("%s  %s  %s", ts, ev.Type, ev.Subject)
}

func signerName(s *detector.Signature) string {
	switch {
	case s == nil:
		return "unsigned"
	case s.Verified:
		return s.KeyID
	}
	return s.KeyID + "(" + s.Reason + ")"
}
