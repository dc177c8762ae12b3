package rig

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Main runs run with the process's arguments and output, its context
// cancelled by SIGINT or SIGTERM, and exits with the status it returns.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// LoadAvg returns the machine's load averages over 1, 5 and 15 minutes
// (/proc/loadavg): the machine is shared, and a figure says how busy it
// was.
func LoadAvg() ([3]float64, error) {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return l, fmt.Errorf("/proc/loadavg %q: want three averages", b)
	}
	for i := range l {
		if l[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return l, fmt.Errorf("/proc/loadavg: %w", err)
		}
	}
	return l, nil
}

// Backlog returns the events of stream that its durable consumers have
// not yet acknowledged (pending and unacknowledged), and how many durables
// it has. An ephemeral consumer (a replay, a tool) is not serve's backlog.
func Backlog(ctx context.Context, js jetstream.JetStream, stream string) (backlog uint64, durables int, err error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, 0, err
	}
	list := st.ListConsumers(ctx)
	for ci := range list.Info() {
		if ci.Config.Durable != "" {
			backlog += ci.NumPending + uint64(ci.NumAckPending)
			durables++
		}
	}
	return backlog, durables, list.Err()
}

// Serve is a `carddrift serve` that a test started.
type Serve struct {
	// Bin is the carddrift binary; NATSURL its embedded server's client
	// URL; HTTPAddr its /metrics and /fleet server (http://host:port).
	Bin, NATSURL, HTTPAddr string
}

// StartServe builds cmd/carddrift into a temporary directory and starts
// `carddrift serve` on its embedded server (a data directory of its own,
// free ports, fetches to loopback) with args after those, until the test
// ends; it returns once serve's workers consume.
func StartServe(t *testing.T, args ...string) Serve {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "carddrift")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/carddrift/carddrift/cmd/carddrift").CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/carddrift: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--data-dir", t.TempDir(), "--nats-port", "0", "--http-addr", "127.0.0.1:0",
		"--fetch-allow", "127.0.0.0/8", "--log-format", "json", "--log-level", "error"}, args...)...)
	// Its output goes to a file, which the waits below read.
	logPath := filepath.Join(t.TempDir(), "serve.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() // the child has its own copy
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	wait := func(re string) []string {
		var out []byte
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			out, _ = os.ReadFile(logPath)
			if m := regexp.MustCompile(re).FindSubmatch(out); m != nil {
				var found []string
				for _, g := range m {
					found = append(found, string(g))
				}
				return found
			}
		}
		t.Fatalf("carddrift serve: no %s in its output:\n%s", re, out)
		return nil
	}
	s := Serve{Bin: bin, NATSURL: wait(`listening on (nats://\S+)`)[1], HTTPAddr: wait(`health on (http://[^/\s]+)/metrics`)[1]}
	wait(`consuming A2A_TASKS`)
	return s
}
