package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store"
)

// BenchmarkReplayWindow measures what `carddrift replay` costs per question
// as deployed: the binary (a process per replay) against a standalone
// nats-server serving a copy of a 400-agent demo store, and of one
// recorded twice as long. Each iteration replays, one after the other,
// everything, a 2 s window (at 30% of the lifecycle events) and one agent (the
// first verdict's) of the first store, then everything and the same
// window position of the second; the metrics are medians over the
// iterations, each ratio taken within one iteration:
//
//   - window-%, agent-%: wall time against the full replay (issue 34's
//     bars: ≤ 20% and ≤ 10%); window-cpu-%, agent-cpu-%: the same of the
//     replay process's CPU time, which a busy machine disturbs less;
//   - full-rss-2x-%, window-rss-2x-%: peak RSS on the store twice as long
//     against the first (memory flat as history doubles: ≤ 110%);
//   - full-s, window-s, agent-s: the walls of the first store.
//
// The stores: REPLAYBENCH_STORES=D30,D60 (directories `carddrift demo
// --agents 400 --duration 30s --seed 2 --data-dir D30` and `--duration
// 60s … D60` wrote), else both are recorded first (about 2 minutes). The
// server: CARDDRIFT_NATS_SERVER_BIN, else a build of the module's.
//
//	go test ./cmd/carddrift -run '^$' -bench ReplayWindow -benchtime 5x
func BenchmarkReplayWindow(b *testing.B) {
	bin := buildWithoutRace(b)
	natsd := benchNATSServer(b)
	var dirs []string
	if s := os.Getenv("REPLAYBENCH_STORES"); s != "" {
		dirs = strings.Split(s, ",")
	} else {
		for _, d := range []string{"30s", "60s"} {
			dir := filepath.Join(b.TempDir(), "D"+d)
			if code, _, stderr := runChild(b, bin, "demo", "--agents", "400", "--duration", d, "--seed", "2", "--data-dir", dir, "--log-level", "error"); code != exitOK && code != exitFindings {
				b.Fatalf("demo --duration %s = %d:\n%s", d, code, stderr)
			}
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) != 2 {
		b.Fatalf("REPLAYBENCH_STORES=%q: want two directories, the second twice as long", os.Getenv("REPLAYBENCH_STORES"))
	}
	urls := make([]string, len(dirs))
	var q replayQuestion
	for i, dir := range dirs {
		urls[i] = serveStoreCopy(b, natsd, dir)
		w := windowOf(b, urls[i], i == 0)
		if i == 0 {
			q.agent = w.agent
		}
		q.windows = append(q.windows, w.windows[0])
	}

	// A sub-benchmark, so that the stores are recorded and served once.
	b.Run("400-agents", func(b *testing.B) {
		b.Logf("load before: %s; agent %s, windows %v", loadAverage(), q.agent, q.windows)
		var full, win, ag, window, agent, windowCPU, agentCPU, fullRSS, windowRSS []float64
		for range b.N {
			f := replayChild(b, bin, urls[0])
			w := replayChild(b, bin, urls[0], q.windows[0]...)
			a := replayChild(b, bin, urls[0], "--agent", q.agent)
			f2 := replayChild(b, bin, urls[1])
			w2 := replayChild(b, bin, urls[1], q.windows[1]...)
			full, win, ag = append(full, f.wall), append(win, w.wall), append(ag, a.wall)
			window, agent = append(window, 100*w.wall/f.wall), append(agent, 100*a.wall/f.wall)
			windowCPU, agentCPU = append(windowCPU, 100*w.cpu/f.cpu), append(agentCPU, 100*a.cpu/f.cpu)
			fullRSS = append(fullRSS, 100*float64(f2.rss)/float64(f.rss))
			windowRSS = append(windowRSS, 100*float64(w2.rss)/float64(w.rss))
		}
		b.ReportMetric(middle(window), "window-%")
		b.ReportMetric(middle(agent), "agent-%")
		b.ReportMetric(middle(windowCPU), "window-cpu-%")
		b.ReportMetric(middle(agentCPU), "agent-cpu-%")
		b.ReportMetric(middle(fullRSS), "full-rss-2x-%")
		b.ReportMetric(middle(windowRSS), "window-rss-2x-%")
		b.ReportMetric(middle(full), "full-s")
		b.ReportMetric(middle(win), "window-s")
		b.ReportMetric(middle(ag), "agent-s")
		b.Logf("load after: %s", loadAverage())
	})
}

// replayQuestion is what the benchmark asks of the stores: an agent of the
// first, and a window of each (--since, --until).
type replayQuestion struct {
	agent   string
	windows [][]string
}

// childCost is one replay process's wall and CPU (user and system)
// seconds and peak RSS (bytes).
type childCost struct {
	wall, cpu float64
	rss       int64
}

// replayChild runs `carddrift replay --nats-url url args...` as a process
// of its own, its output discarded, and returns what it cost.
func replayChild(b *testing.B, bin, url string, args ...string) childCost {
	b.Helper()
	cmd := exec.Command(bin, append([]string{"replay", "--nats-url", url}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("replay %v: %v\n%s", args, err, stderr.String())
	}
	c := childCost{wall: time.Since(start).Seconds()}
	c.cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		c.rss = ru.Maxrss << 10 // kilobytes on Linux
	}
	return c
}

// serveStoreCopy serves a copy of the store directory with a nats-server
// process until the benchmark ends, and returns its URL.
func serveStoreCopy(b *testing.B, natsd, dir string) string {
	b.Helper()
	served := filepath.Join(b.TempDir(), "served")
	if err := os.CopyFS(served, os.DirFS(dir)); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(natsd, "-js", "-sd", served, "-a", "127.0.0.1", "-p", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	b.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-exited:
			b.Fatalf("nats-server on %s exited: %v", dir, err)
		default:
		}
		if nc, err := nats.Connect(url, nats.Timeout(time.Second)); err == nil {
			js, _ := jetstream.New(nc)
			_, err = js.Stream(context.Background(), store.DefaultConfig().LifecycleStream)
			nc.Close()
			if err == nil {
				return url
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("nats-server on %s: no lifecycle stream after 30 s", dir)
		}
	}
}

// windowOf returns the 2 s window from the lifecycle stream's message at
// 30% of its sequences (when it was stored) and, with agent, the agent of
// the store's first card.drift.
func windowOf(b *testing.B, url string, agent bool) replayQuestion {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	cfg := store.DefaultConfig()
	cfg.SetDefaults()
	life, err := js.Stream(ctx, cfg.LifecycleStream)
	if err != nil {
		b.Fatal(err)
	}
	st := life.CachedInfo().State
	at, err := life.GetMsg(ctx, st.FirstSeq+(st.LastSeq-st.FirstSeq)*3/10)
	if err != nil {
		b.Fatal(err)
	}
	since := at.Time.UTC()
	q := replayQuestion{windows: [][]string{{"--since", since.Format(time.RFC3339Nano), "--until", since.Add(2 * time.Second).Format(time.RFC3339Nano)}}}
	if !agent {
		return q
	}
	card, err := js.Stream(ctx, cfg.EventsStream)
	if err != nil {
		b.Fatal(err)
	}
	oc, err := card.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"card.drift.>"}})
	if err != nil {
		b.Fatal(err)
	}
	msg, err := oc.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		b.Fatalf("the store's first card.drift: %v", err)
	}
	ev, err := events.Decode(msg)
	if err != nil {
		b.Fatal(err)
	}
	q.agent = ev.AgentURL()
	return q
}

// benchNATSServer returns CARDDRIFT_NATS_SERVER_BIN, else a nats-server
// built from the module's dependency.
func benchNATSServer(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("CARDDRIFT_NATS_SERVER_BIN"); bin != "" {
		return bin
	}
	return goBuild(b, "github.com/nats-io/nats-server/v2", "nats-server")
}

// loadAverage is the machine's load average, "" where /proc has none.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

// middle is the median of xs.
func middle(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
