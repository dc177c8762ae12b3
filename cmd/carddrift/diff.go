package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/fetcher"
)

type diffFlags struct {
	json              bool
	failOn            string
	skill             string
	requiresStreaming bool
	requiresPush      bool
	posture           string
	idempotent        bool
	inputModes        string
	outputModes       string
	security          string
	fetch             fetchFlags
}

func (f *diffFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.json, "json", false, `print {"findings":[…],"verdict":…} as JSON`)
	fs.StringVar(&f.failOn, "fail-on", "", "exit 1 when a finding at or above this severity exists: breaking, warning or info")
	fs.StringVar(&f.skill, "skill", "", "task: the skill id the task uses (adds a verdict)")
	fs.BoolVar(&f.requiresStreaming, "requires-streaming", false, "task: the task needs streaming")
	fs.BoolVar(&f.requiresPush, "requires-push", false, "task: the task needs push notifications")
	fs.StringVar(&f.posture, "posture", "", "task: fail-closed (default) or degrade")
	fs.BoolVar(&f.idempotent, "idempotent", false, "task: the task is idempotent and restartable")
	fs.StringVar(&f.inputModes, "input-modes", "", "task: comma-separated media types the task sends")
	fs.StringVar(&f.outputModes, "output-modes", "", "task: comma-separated media types the task accepts")
	fs.StringVar(&f.security, "security", "", "task: comma-separated security scheme names the client uses")
	f.fetch.register(fs)
}

type diffOutput struct {
	Old      cardSummary            `json:"old"`
	New      cardSummary            `json:"new"`
	Findings []detector.Finding     `json:"findings"`
	Verdict  *verdictOutput         `json:"verdict"`
	Task     *detector.Requirements `json:"task,omitempty"`
}

type cardSummary struct {
	Source           string `json:"source"`
	Digest           string `json:"digest"`
	Fingerprint      string `json:"fingerprint"`
	StructuralDigest string `json:"structuralDigest"`
	Version          string `json:"version"`
}

type verdictOutput struct {
	Action    detector.Action    `json:"action"`
	Posture   detector.Posture   `json:"posture"`
	Reason    string             `json:"reason"`
	Impacting []detector.Finding `json:"impacting"`
}

func (f *diffFlags) run(ctx context.Context, e *env, args []string) error {
	if len(args) != 2 {
		return usagef("diff needs exactly two cards (OLD NEW), got %d argument(s)", len(args))
	}
	var failOn detector.Severity
	if f.failOn != "" {
		s, err := detector.ParseSeverity(f.failOn)
		if err != nil {
			return usageError{fmt.Errorf("--fail-on: %w", err)}
		}
		failOn = s
	}
	posture, err := detector.ParsePosture(f.posture)
	if err != nil {
		return usageError{fmt.Errorf("--posture: %w", err)}
	}
	fe, err := f.fetch.fetcher(fetcher.SignatureOptions{})
	if err != nil {
		return err
	}
	defer fe.Close()
	cards := make([]*detector.Card, 2)
	sums := make([]cardSummary, 2)
	for i, where := range args {
		src, c, digest, err := readCard(ctx, e, where, fe)
		if err != nil {
			return err
		}
		cards[i] = c
		sums[i] = cardSummary{Source: src.Where, Digest: digest, Fingerprint: detector.Fingerprint(c),
			StructuralDigest: detector.StructuralDigest(c), Version: c.Version}
	}
	out := diffOutput{Old: sums[0], New: sums[1]}
	if f.skill != "" || f.requiresStreaming || f.requiresPush || f.posture != "" || f.idempotent ||
		f.inputModes != "" || f.outputModes != "" || f.security != "" {
		req := detector.Requirements{
			SkillID: f.skill, Streaming: f.requiresStreaming, PushNotifications: f.requiresPush,
			InputModes: splitList(f.inputModes), OutputModes: splitList(f.outputModes),
			Security: splitList(f.security), Posture: posture, Idempotent: f.idempotent,
		}
		// As a worker would judge the second card for a task pinned on the first.
		d := task.Decide(task.Pin{Digest: sums[0].Digest, Requirements: req}, cards[0],
			task.Observation{Digest: sums[1].Digest, Card: cards[1]}, nil, task.Policy{})
		v := d.Verdict
		out.Findings = d.Findings
		out.Task = &req
		out.Verdict = &verdictOutput{Action: v.Action, Posture: v.Posture, Reason: v.Reason, Impacting: append([]detector.Finding{}, v.Impacting...)}
	} else {
		out.Findings = detector.Diff(cards[0], cards[1])
	}
	out.Findings = append([]detector.Finding{}, out.Findings...) // [] in JSON, never null
	if err := printResult(e.stdout, f.json, out, func(w io.Writer) { writeDiffText(w, &out) }); err != nil {
		return err
	}
	if failOn != 0 {
		for _, fd := range out.Findings {
			if fd.Severity >= failOn {
				return exitError{exitFindings}
			}
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func writeDiffText(w io.Writer, out *diffOutput) {
	fmt.Fprintf(w, "old %s  %s  version %q\n", out.Old.Source, out.Old.Digest, out.Old.Version)
	fmt.Fprintf(w, "new %s  %s  version %q\n", out.New.Source, out.New.Digest, out.New.Version)
	if len(out.Findings) == 0 {
		fmt.Fprintln(w, "\nno findings")
	}
	for _, sev := range []detector.Severity{detector.Breaking, detector.Warning, detector.Info} {
		var group []detector.Finding
		for _, f := range out.Findings {
			if f.Severity == sev {
				group = append(group, f)
			}
		}
		if len(group) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (%d)\n", sev, len(group))
		for _, f := range group {
			fmt.Fprintf(w, "  %-38s %s\n", f.Rule, f.Path)
			fmt.Fprintf(w, "      %s\n", f.Message)
			if f.Before != nil || f.After != nil {
				fmt.Fprintf(w, "      %s → %s\n", compactJSON(f.Before), compactJSON(f.After))
			}
		}
	}
	if out.Verdict != nil {
		fmt.Fprintf(w, "\nverdict: %s (%s)\n  %s\n", out.Verdict.Action, out.Verdict.Posture, out.Verdict.Reason)
	}
}

func compactJSON(v any) string {
	if v == nil {
		return "(none)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
