package test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
)

// A worker killed mid-stream loses no event and duplicates no card.drift:
// its unacknowledged events are redelivered to another worker after AckWait,
// and card.drift is published once per (task, pinned, live, rule ids).

const (
	killAgents       = 8
	killTasksPerAgnt = 4
	killFetchDelay   = 100 * time.Millisecond
	// killCutAfter is how many card.drift the first worker publishes before
	// it is cut off (of 2 per task).
	killCutAfter = 8
)

// slowAgent serves a card with no-cache after a delay, so that a worker is
// always in the middle of something.
type slowAgent struct{ *servicetest.Agent }

func newSlowAgent(t testing.TB, delay time.Duration) *slowAgent {
	a := servicetest.NewAgent(t, "")
	a.SetDelay(delay)
	return &slowAgent{a}
}

func (a *slowAgent) set(card string) { a.Set(card) }

// killWorkload is the pinning write-up's rotation across a small fleet: each
// task is pinned on the T0 card the client planned with, while the agents
// already serve the T+40s card. Each task then sees a streaming request
// (drift: abort), an input-required status (the same drift: not published
// again) and an artifact of an undeclared type (a new rule set: a second
// drift). Every task must end with exactly one card.pinned and two card.drift.
type killWorkload struct {
	agents []*slowAgent
	tasks  []string
	agent  map[string]string // task → agent URL
}

// newKillWorkload starts the given number of slow agents serving the T+40s
// card, with tasksPerAgent tasks each, named by the format taskID of the
// agent's and the task's index.
func newKillWorkload(t testing.TB, agents, tasksPerAgent int, taskID string) *killWorkload {
	k := &killWorkload{agent: map[string]string{}}
	for i := range agents {
		a := newSlowAgent(t, killFetchDelay)
		a.set(writeupT40)
		k.agents = append(k.agents, a)
		for j := range tasksPerAgent {
			task := fmt.Sprintf(taskID, i, j)
			k.tasks = append(k.tasks, task)
			k.agent[task] = a.URL()
		}
	}
	return k
}

// publishPins submits every task, with the card its client planned against.
func (k *killWorkload) publishPins(t testing.TB, emit *client.Emitter) {
	ctx := context.Background()
	for _, task := range k.tasks {
		url := k.agent[task]
		card := strings.ReplaceAll(writeupT0, "AGENT", url)
		must(t, emit.Submitted(ctx, events.Submitted{TaskID: task, AgentURL: url, SkillID: "summarize",
			Requires: events.Requires{Streaming: true, Security: []string{"bearer"}}, Posture: detector.FailClosed,
			Card: []byte(card)}))
	}
}

// publishTransitions emits every task's transitions, task by task.
func (k *killWorkload) publishTransitions(t testing.TB, emit *client.Emitter) {
	ctx := context.Background()
	for _, task := range k.tasks {
		url := k.agent[task]
		must(t, emit.Request(ctx, events.Request{TaskID: task, AgentURL: url, Method: "tasks/sendSubscribe", Attempt: 1}))
		must(t, emit.Status(ctx, events.Status{TaskID: task, AgentURL: url, State: "input-required"}))
		must(t, emit.Artifact(ctx, events.Artifact{TaskID: task, AgentURL: url, ArtifactID: "a", MediaTypes: []string{"application/pdf"}}))
	}
}

// publish submits every task and emits its transitions right away, so that
// a worker may die with submissions and later transitions of the same tasks
// in flight: a redelivery can then bring transitions ahead of their
// submission, which the worker must wait for (TestRedeliveryReorderKeepsTransitions).
func (k *killWorkload) publish(t testing.TB, emit *client.Emitter) {
	k.publishPins(t, emit)
	k.publishTransitions(t, emit)
}

func (k *killWorkload) done(o *outbound) bool {
	pinned, drift := countBy(o, events.TypePinned), countBy(o, events.TypeDrift)
	for _, task := range k.tasks {
		if pinned[task] < 1 || drift[task] < 2 {
			return false
		}
	}
	return true
}

// check asserts no event lost and no card.drift duplicated: one card.pinned
// and two card.drift per task in the stream, each drift stored once, with
// as many stored drifts as distinct rule sets; nothing dead-lettered; and the
// lifecycle stream fully acknowledged.
func (k *killWorkload) check(t *testing.T, r *rig, out *outbound) {
	t.Helper()
	r.drained(t, 20*time.Second)
	out.CaughtUp(t) // every late publish collected, not only those of the next 200ms
	pinned := countBy(out, events.TypePinned)
	ids := map[string]int{}
	ruleSets := map[string]map[string]bool{}
	stored := map[string]int{}
	for _, ev := range out.all(events.TypeDrift) {
		d := ev.Data.(events.Drift)
		ids[ev.ID]++
		stored[d.TaskID]++
		if ruleSets[d.TaskID] == nil {
			ruleSets[d.TaskID] = map[string]bool{}
		}
		ruleSets[d.TaskID][strings.Join(keys(rulesOf(d)), ",")] = true
		if d.Verdict.Action != detector.Abort || !rulesOf(d)[detector.RuleStreamingDisabled] {
			t.Errorf("task %s: verdict %s with %v, want abort on streaming-disabled", d.TaskID, d.Verdict.Action, keys(rulesOf(d)))
		}
	}
	for id, n := range ids {
		if n > 1 {
			t.Errorf("card.drift %s stored %d times", id, n)
		}
	}
	for _, task := range k.tasks {
		if pinned[task] != 1 {
			t.Errorf("task %s: %d card.pinned stored, want 1", task, pinned[task])
		}
		if stored[task] != 2 || len(ruleSets[task]) != 2 {
			t.Errorf("task %s: %d card.drift stored for %d distinct rule sets, want 2 and 2", task, stored[task], len(ruleSets[task]))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dlq, err := r.js.Stream(ctx, r.cfg.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := dlq.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Errorf("dead-letter stream: %v (err %v), want empty", info.State.Msgs, err)
	}
}

// dumpIncomplete logs what the tasks that lack an outcome have, for failure
// reports.
func (k *killWorkload) dumpIncomplete(t *testing.T, r *rig, out *outbound) {
	pinned, drift := countBy(out, events.TypePinned), countBy(out, events.TypeDrift)
	for _, task := range k.tasks {
		if pinned[task] == 1 && drift[task] == 2 {
			continue
		}
		var ds []string
		for _, d := range out.drifts(task) {
			ds = append(ds, strings.Join(keys(rulesOf(d)), ",")+" by "+d.Trigger.Type)
		}
		pin, rev, err := r.stores.Pins.Get(context.Background(), task)
		t.Logf("task %s: %d pinned, drifts %v; pin rev %d err %v: live %s reported %s schemaErr %v",
			task, pinned[task], ds, rev, err, pin.LiveDigest, pin.Reported, pin.SchemaErrorAt)
	}
}

func sources(o *outbound, typ string) map[string]int {
	m := map[string]int{}
	for _, ev := range o.all(typ) {
		m[ev.Source]++
	}
	return m
}

func TestWorkerKilledMidStream(t *testing.T) {
	for _, tc := range []struct {
		name string
		// kill stops the first worker without letting it finish: its
		// connection cut, or a drain timeout too short for its fetches.
		tweak func(*worker.Options)
		kill  func(cut func(), stop func())
	}{
		{name: "connection-cut", kill: func(cut, stop func()) { cut(); stop() }},
		{name: "drain-timeout", tweak: func(o *worker.Options) { o.DrainTimeout = 20 * time.Millisecond },
			kill: func(cut, stop func()) { stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, testConfig())
			out := r.collect()
			k := newKillWorkload(t, killAgents, killTasksPerAgnt, "kill-%d-%d")
			nc1, stop1 := r.startWorkerOn(t, r.nc.ConnectedUrl(), "w1", tc.tweak)

			k.publish(t, r.emit)
			eventually(t, 15*time.Second, "the first worker's first drifts", func() bool {
				return len(out.all(events.TypeDrift)) >= killCutAfter
			})
			tc.kill(func() { nc1.Close() }, stop1)
			before := len(out.all(events.TypeDrift))
			if k.done(out) {
				t.Fatal("the first worker finished everything before it was stopped: nothing to test")
			}
			killedAt := time.Now()

			r.startWorker("w2", nil)
			eventually(t, 30*time.Second, "every task's pin and two drifts", func() bool { return k.done(out) })
			t.Logf("w1 published %d card.drift before it was stopped; w2 finished %v later; drift by source %v",
				before, time.Since(killedAt).Round(time.Millisecond), sources(out, events.TypeDrift))
			k.check(t, r, out)
			if sources(out, events.TypeDrift)["carddrift/w2"] == 0 {
				t.Error("w2 published no card.drift: the hand-over was not exercised")
			}
		})
	}
}

// buildCarddrift builds the carddrift binary, with -race when the tests run
// with it (so that the build reuses the test build's cache), once per run
// of the package: eleven tests each built their own, 7.5 of the package's
// 17.5 minutes under -race at load 20 (the package timeout is 10). The
// binary lives in a directory TestMain removes.
//
// CARDDRIFT_TEST_BINARY names a prebuilt binary to use instead.
func buildCarddrift(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CARDDRIFT_TEST_BINARY"); bin != "" {
		return bin
	}
	built.Lock()
	defer built.Unlock()
	if built.bin != "" {
		return built.bin
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "carddrift-test-")
		if err != nil {
			t.Fatal(err)
		}
		built.dir = dir
	}
	bin := filepath.Join(built.dir, "carddrift")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	start := time.Now()
	out, err := exec.Command(goBin, append(args, "../cmd/carddrift")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build ../cmd/carddrift: %v\n%s", err, out)
	}
	t.Logf("built carddrift in %v", time.Since(start).Round(time.Millisecond))
	built.bin = bin
	return bin
}

// built is the carddrift binary buildCarddrift built for this run, and
// its directory.
var built struct {
	sync.Mutex
	bin, dir string
}

// TestMain removes the binary buildCarddrift built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// serveProc is a running `carddrift serve`.
type serveProc struct {
	*child
	httpAddr string
}

// syncBuffer collects a process's output (servicetest.Output).
type syncBuffer = servicetest.Output

// startServe starts `carddrift serve` against natsURL with the rig's stream
// layout (4 partitions, AckWait 2s) and waits until its worker consumes.
// extra flags follow the defaults (a repeated flag takes its last value).
func startServe(t *testing.T, bin, natsURL, name string, extra ...string) *serveProc {
	t.Helper()
	return launchServe(t, bin, name, "carddrift_", nil, append(rigServeFlags(natsURL), extra...)...)
}

// rigServeFlags are startServe's defaults (a later flag overrides one).
func rigServeFlags(natsURL string) []string {
	return []string{
		"--nats-url", natsURL,
		"--fetch-allow", "127.0.0.0/8",
		"--ack-wait", "2s",
		"--min-lease", "0",
		"--partitions", "4",
		"--drain-timeout", "3s",
		"--log-format", "json",
		"--log-level", "warn",
	}
}

// launchServe starts `carddrift serve --name name` with its own data
// directory, /metrics on a free port (read when the test fails: the lines
// starting with metricsPrefix, none if it is empty), then args, and waits
// until its worker consumes. The child's environment is the test's without
// its CARDDRIFT_* variables, which must not leak into it, plus env
// ("NAME=value", set as CARDDRIFT_NAME).
func launchServe(t *testing.T, bin, name, metricsPrefix string, env []string, args ...string) *serveProc {
	t.Helper()
	p := spawnServe(t, bin, name, "consuming", env, args...)
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			if t.Failed() && metricsPrefix != "" {
				t.Logf("%s metrics:\n%s", name, p.metrics(metricsPrefix))
			}
			p.stop(os.Kill, 0)
		}
	})
	return p
}

// spawnServe is launchServe up to the first stdout line that holds ready.
func spawnServe(t *testing.T, bin, name, ready string, env []string, args ...string) *serveProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"serve", "--name", name, "--data-dir", t.TempDir(), "--http-addr", httpAddr}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CARDDRIFT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for _, kv := range env {
		cmd.Env = append(cmd.Env, "CARDDRIFT_"+kv)
	}
	p := &serveProc{httpAddr: httpAddr}
	p.child, _ = startChild(t, name, cmd, func(line string) bool { return strings.Contains(line, ready) })
	return p
}

// metrics returns the process's /metrics lines that start with prefix.
func (p *serveProc) metrics(prefix string) string {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + p.httpAddr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) && !strings.Contains(sc.Text(), "_bucket{") {
			out = append(out, sc.Text())
		}
	}
	return strings.Join(out, "\n")
}

func (p *serveProc) signal(t *testing.T, sig syscall.Signal, within time.Duration) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("%s did not exit within %v of %v", p.name, within, sig)
	}
}

// A real `carddrift serve` process killed with SIGKILL mid-stream; a second
// one takes over. The serve processes' consumers keep their default pinned
// TTL (10s), so the hand-over takes up to AckWait plus that.
func TestServeKilledMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the carddrift binary")
	}
	bin := buildCarddrift(t)
	start := time.Now()
	r := newRig(t, testConfig())
	out := r.collect()
	k := newKillWorkload(t, killAgents, killTasksPerAgnt, "kill-%d-%d")
	url := r.nc.ConnectedUrl()

	p1 := startServe(t, bin, url, "serve-1")
	k.publish(t, r.emit)
	eventually(t, 15*time.Second, "serve-1's first drifts", func() bool {
		return len(out.all(events.TypeDrift)) >= killCutAfter
	})
	p1.signal(t, syscall.SIGKILL, 5*time.Second)
	before := len(out.all(events.TypeDrift))
	if k.done(out) {
		t.Fatal("serve-1 finished everything before it was killed: nothing to test")
	}
	killedAt := time.Now()

	p2 := startServe(t, bin, url, "serve-2")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("outbound events by type and source: %v %v %v", len(out.all(events.TypePinned)), sources(out, events.TypeDrift), len(out.all(events.TypeObserved)))
			r.dumpLifecycle(t)
			k.dumpIncomplete(t, r, out)
		}
	})
	var firstByServe2 time.Duration
	eventually(t, 40*time.Second, "every task's pin and two drifts", func() bool {
		if firstByServe2 == 0 && sources(out, "")["carddrift/serve-2"] > 0 {
			firstByServe2 = time.Since(killedAt)
			t.Logf("serve-2's first event %v after the kill", firstByServe2)
		}
		return k.done(out)
	})
	t.Logf("serve-1 published %d card.drift before SIGKILL; serve-2 finished %v later; drift by source %v; total %v",
		before, time.Since(killedAt).Round(time.Millisecond), sources(out, events.TypeDrift), time.Since(start).Round(time.Millisecond))
	k.check(t, r, out)
	bySource := sources(out, events.TypeDrift)
	if bySource["carddrift/serve-2"] == 0 {
		t.Error("serve-2 published no card.drift: the hand-over was not exercised")
	}
	if len(bySource) != 2 {
		t.Errorf("card.drift sources %v, want serve-1 and serve-2", bySource)
	}

	p2.signal(t, syscall.SIGTERM, 10*time.Second)
	if p2.err != nil {
		t.Errorf("serve-2 after SIGTERM: %v", p2.err)
	}
}
