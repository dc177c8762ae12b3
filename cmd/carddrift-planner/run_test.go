package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
)

// newRig is the servicetest rig with one worker, its streams in memory; its
// URL is what the planner is given.
func newRig(t *testing.T) *servicetest.Rig {
	t.Helper()
	return servicetest.Start(t, servicetest.Options{
		Configure: func(c *store.Config) {
			c.Partitions, c.Storage, c.AckWait = 2, jetstream.MemoryStorage, 5*time.Second
		},
		Source:  "urn:test:client",
		Workers: []string{"planner-test-worker"},
		Worker:  func(o *worker.Options) { o.DrainTimeout = 3 * time.Second },
	})
}

// card is a v0.3 card with the skills echo and summarize.
func card(version string, streaming bool, summarizeOut string) []byte {
	return fmt.Appendf(nil, `{"name":"Agent","description":"d","version":%q,"protocolVersion":"0.3.0",
"url":"https://agent.example/a2a","preferredTransport":"JSONRPC","capabilities":{"streaming":%v},
"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
"skills":[{"id":"echo","name":"Echo","description":"d","tags":["t"]},
{"id":"summarize","name":"Summarize","description":"d","tags":["t"],"outputModes":[%s]}]}`, version, streaming, summarizeOut)
}

// runPlanner runs the command in-process until it returns.
func runPlanner(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// drift submits tasks on a's card v1, changes the card to v2 and has every
// task send a request, so that the worker judges each against v2.
func drift(t *testing.T, r *servicetest.Rig, a *servicetest.Agent, v1, v2 []byte, tasks map[string]events.Submitted) {
	t.Helper()
	ctx := context.Background()
	for id, s := range tasks {
		s.TaskID, s.AgentURL, s.Card = id, a.URL(), v1
		if err := r.Emit.Submitted(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	r.Drained(t, 15*time.Second)
	a.Set(string(v2))
	for id := range tasks {
		if err := r.Emit.Request(ctx, events.Request{TaskID: id, AgentURL: a.URL(), Method: "message/stream", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r.Drained(t, 15*time.Second)
}

// A fleet of tasks on one agent whose card changes: the reference planner
// cancels the fail-closed task, re-plans the degradable one (a new
// submission that replaces the pin), refuses to re-plan one the live card
// no longer satisfies, and lets the untouched one continue.
func TestPlannerActsOnVerdicts(t *testing.T) {
	r := newRig(t)
	v1 := card("1.0.0", true, `"text/plain","application/json"`)
	v2 := card("1.1.0", false, `"text/plain"`)
	a := servicetest.NewAgent(t, string(v1))
	ctx := context.Background()
	tasks := map[string]events.Submitted{
		"abort-me":      {SkillID: "echo", Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed},
		"replan-me":     {SkillID: "summarize", Posture: detector.Degrade, Idempotent: true},
		"cannot-replan": {SkillID: "echo", Requires: events.Requires{Streaming: true}, Posture: detector.Degrade, Idempotent: true},
		"continue-me":   {SkillID: "echo", Posture: detector.FailClosed},
	}
	drift(t, r, a, v1, v2, tasks)

	code, stdout, stderr := runPlanner(t, "--nats-url", r.URL(), "--durable", "test-planner", "--from-start",
		"--fetch-allow", "127.0.0.0/8", "--json", "--limit", "4", "--log-level", "warn")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	got := map[string]outcome{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var o outcome
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		got[o.TaskID] = o
	}
	want := map[string][2]string{
		"abort-me":      {string(detector.Abort), didCancel},
		"replan-me":     {string(detector.Replan), didResubmit},
		"cannot-replan": {string(detector.Replan), didCannotAbort},
		"continue-me":   {string(detector.Continue), didContinue},
	}
	for id, w := range want {
		if o := got[id]; string(o.Action) != w[0] || o.Did != w[1] {
			t.Errorf("%s: action %s did %s, want %s %s (reason %q)", id, o.Action, o.Did, w[0], w[1], o.Reason)
		}
	}
	if o := got["cannot-replan"]; !strings.Contains(o.Reason, "streaming") {
		t.Errorf("cannot-replan reason = %q, want the unmet streaming requirement", o.Reason)
	}
	liveDigest, _ := detector.Digest(v2)
	if o := got["replan-me"]; o.Resubmitted != liveDigest {
		t.Errorf("replan-me resubmitted %s, want the live card %s", o.Resubmitted, liveDigest)
	}

	// The re-submission replaced the pin with the live card, keeping the
	// task's requirements; the others' pins are untouched.
	natstest.Eventually(t, 15*time.Second, "re-planned pin", func() bool {
		p, _, err := r.Stores.Pins.Get(ctx, "replan-me")
		return err == nil && p.Digest == liveDigest
	})
	p, _, _ := r.Stores.Pins.Get(ctx, "replan-me")
	if p.Source != events.PinClientCard || p.Requirements.SkillID != "summarize" || p.Requirements.Posture != detector.Degrade || !p.Requirements.Idempotent {
		t.Errorf("re-planned pin = %+v", p)
	}
	v1Digest, _ := detector.Digest(v1)
	for _, id := range []string{"abort-me", "cannot-replan", "continue-me"} {
		if p, _, _ := r.Stores.Pins.Get(ctx, id); p.Digest != v1Digest {
			t.Errorf("%s: pin %s, want it unchanged (%s)", id, p.Digest, v1Digest)
		}
	}

	// The next transition of the re-planned task is judged against the new
	// pin: no further drift.
	r.Drained(t, 15*time.Second)
	if err := r.Emit.Request(ctx, events.Request{TaskID: "replan-me", AgentURL: a.URL(), Method: "message/stream", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	r.Drained(t, 15*time.Second)
	if n := driftCount(t, r, "replan-me"); n != 1 {
		t.Errorf("replan-me has %d card.drift, want 1 (none after the re-plan)", n)
	}
}

func driftCount(t *testing.T, r *servicetest.Rig, taskID string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := r.JS.OrderedConsumer(ctx, r.Config.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"card.drift.*." + events.Token(taskID)}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return int(info.NumPending)
}

// Filters reach the subscription: with --actions abort only the abort is
// printed (human format), and --dry-run publishes nothing.
func TestPlannerFiltersAndDryRun(t *testing.T) {
	r := newRig(t)
	v1 := card("1.0.0", true, `"text/plain","application/json"`)
	a := servicetest.NewAgent(t, string(v1))
	ctx := context.Background()
	drift(t, r, a, v1, card("1.1.0", false, `"text/plain"`), map[string]events.Submitted{
		"abort-me":  {SkillID: "echo", Requires: events.Requires{Streaming: true}, Posture: detector.FailClosed},
		"replan-me": {SkillID: "summarize", Posture: detector.Degrade, Idempotent: true},
	})

	code, stdout, stderr := runPlanner(t, "--nats-url", r.URL(), "--durable", "aborts", "--from-start", "--actions", "abort",
		"--min-severity", "breaking", "--limit", "1", "--log-level", "warn")
	if code != exitOK || !strings.Contains(stdout, "ABORT") || !strings.Contains(stdout, "task=abort-me") || strings.Contains(stdout, "replan-me") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	code, stdout, stderr = runPlanner(t, "--nats-url", r.URL(), "--durable", "dry", "--from-start", "--actions", "replan",
		"--dry-run", "--fetch-allow", "127.0.0.0/8", "--limit", "1", "--log-level", "warn")
	if code != exitOK || !strings.Contains(stdout, "task=replan-me") || !strings.Contains(stdout, didResubmit) || !strings.Contains(stdout, "(dry-run)") {
		t.Errorf("dry run: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	v1Digest, _ := detector.Digest(v1)
	r.Drained(t, 15*time.Second)
	if p, _, _ := r.Stores.Pins.Get(ctx, "replan-me"); p.Digest != v1Digest {
		t.Errorf("dry run changed the pin to %s", p.Digest)
	}
}

func TestPlannerUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--min-severity", "fatal"},
		{"--actions", "abort,explode"},
		{"--agent", "ftp://x"},
		{"--fetch-allow", "not-a-cidr"},
		{"--limit", "-1"},
		{"--fetch-timeout", "0s"},
		{"extra-arg"},
		{"--no-such-flag"},
	} {
		if code, _, _ := runPlanner(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	t.Setenv("CARDDRIFT_MIN_SEVERITY", "fatal")
	if code, _, stderr := runPlanner(t); code != exitUsage || !strings.Contains(stderr, "min-severity") {
		t.Errorf("CARDDRIFT_MIN_SEVERITY=fatal: exit %d, stderr %q", code, stderr)
	}
}

func TestPlannerNoDeployment(t *testing.T) {
	// A NATS server without the carddrift stores: a runtime error, not a hang.
	ns, _, _ := natstest.StartJetStream(t)
	code, _, stderr := runPlanner(t, "--nats-url", ns.ClientURL())
	if code != exitError || !strings.Contains(stderr, "carddrift serve") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// A degrade task whose skill the agent renamed: the worker's verdict names
// the new id (replanSkill) and the reference planner re-submits the task
// onto it.
func TestPlannerReplansOntoRenamedSkill(t *testing.T) {
	r := newRig(t)
	v1 := card("1.0.0", true, `"text/plain"`)
	renamed := bytes.Replace(v1, []byte(`"id":"echo"`), []byte(`"id":"echo-v2"`), 1)
	a := servicetest.NewAgent(t, string(v1))
	ctx := context.Background()
	drift(t, r, a, v1, renamed, map[string]events.Submitted{"rename-me": {SkillID: "echo", Posture: detector.Degrade, Idempotent: true}})

	code, stdout, stderr := runPlanner(t, "--nats-url", r.URL(), "--durable", "rename-planner", "--from-start",
		"--fetch-allow", "127.0.0.0/8", "--json", "--limit", "1", "--log-level", "warn")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var o outcome
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &o); err != nil {
		t.Fatalf("output %q: %v", stdout, err)
	}
	if o.Action != detector.Replan || o.Did != didResubmit || o.Skill != "echo-v2" {
		t.Fatalf("outcome %+v, want a re-submission onto echo-v2", o)
	}
	natstest.Eventually(t, 15*time.Second, "re-planned pin", func() bool {
		p, _, err := r.Stores.Pins.Get(ctx, "rename-me")
		return err == nil && p.Requirements.SkillID == "echo-v2"
	})
}

// A credentials file that does not parse is a usage error, by flag or by
// CARDDRIFT_AGENT_CREDENTIALS, that names the flag and never the value.
func TestPlannerAgentCredentialsUsage(t *testing.T) {
	const secret = "tok-planner-usage-secret"
	bad := filepath.Join(t.TempDir(), "creds.json")
	if err := os.WriteFile(bad, []byte(`{"https://a.example": {"headers": {"Host": "`+secret+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{"flag", []string{"--agent-credentials", bad}, ""},
		{"env", nil, bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("CARDDRIFT_AGENT_CREDENTIALS", tc.env)
			}
			code, stdout, stderr := runPlanner(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, "--agent-credentials") || !strings.Contains(stderr, "bad header") {
				t.Errorf("exit %d, stderr %q; want a usage error naming --agent-credentials", code, stderr)
			}
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("the secret is in the output: %q", stdout+stderr)
			}
		})
	}
}
