package main

import (
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/store/natstest"
)

func TestServeMemoryBudgetUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"not a size", []string{"--memory-budget", "lots"}, "", "lots"},
		{"fraction", []string{"--memory-budget", "15.5MiB"}, "", "minimum"}, // read (store.ParseSize), then below 16MiB
		{"below the minimum", []string{"--memory-budget", "1MiB"}, "", "minimum"},
		{"environment", nil, "12XB", "12XB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("CARDDRIFT_MEMORY_BUDGET", tc.env)
			}
			args := append([]string{"serve", "--data-dir", t.TempDir(), "--nats-port", "0", "--http-addr", ""}, tc.args...)
			code, _, stderr := runCLI(t, "", args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("carddrift %s = %d:\n%s\nwant %d naming %q", strings.Join(args, " "), code, stderr, exitUsage, tc.want)
			}
		})
	}
}

// serve with a budget logs how it is split, sets Go's soft memory limit to
// 1.5× it and GOGC to serveGCPercent (unless GOGC is set) while it runs,
// and restores what it found when it returns.
// With an embedded server it leaves the limit alone (the server's memory is
// the process's too, outside the budget).
func TestServeMemoryBudgetApplied(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Setenv("GOGC", "") // as unset: serve sets its own
	gcPercent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	prevGC := gcPercent()
	t.Run("embedded server", func(t *testing.T) {
		out, errOut, stop := serveInProcess(t, "--data-dir", t.TempDir(), "--nats-port", "0", "--http-addr", "",
			"--partitions", "2", "--log-format", "json", "--memory-budget", "64MiB")
		waitMatch(t, errOut, regexp.MustCompile(`the NATS server is embedded, so Go's soft memory limit is not set`))
		waitMatch(t, out, regexp.MustCompile(`consuming`))
		if got := debug.SetMemoryLimit(-1); got != prev {
			t.Errorf("Go memory limit while serving with an embedded server = %d, want the previous %d", got, prev)
		}
		if got := gcPercent(); got != prevGC {
			t.Errorf("GOGC while serving with an embedded server = %d, want the previous %d", got, prevGC)
		}
		if !stop() {
			t.FailNow()
		}
	})
	srv, _, _ := natstest.StartJetStream(t)
	out, errOut, stop := serveInProcess(t, "--nats-url", srv.ClientURL(), "--http-addr", "",
		"--partitions", "2", "--log-format", "json", "--memory-budget", "64MiB")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stdout:\n%s", out.String())
		}
	})
	waitMatch(t, errOut, regexp.MustCompile(`"budget":"64MiB","pins":"16MiB","cards":"[0-9]+[KMi]*B","liveCards":"[0-9]+[KMi]*B","pull":"[0-9]+[KMi]*B","signatures":"[0-9]+[KMi]*B","signatureResults":"1118481[0-9]B","jkuKeySets":"559240[0-9]B".*"memory budget"`))
	waitMatch(t, out, regexp.MustCompile(`consuming`))
	if got := debug.SetMemoryLimit(-1); got != 96<<20 {
		t.Errorf("Go memory limit while serving = %d, want %d (1.5 × 64 MiB)", got, 96<<20)
	}
	if got := gcPercent(); got != serveGCPercent {
		t.Errorf("GOGC while serving = %d, want %d", got, serveGCPercent)
	}
	if !stop() {
		t.FailNow()
	}
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Errorf("Go memory limit after serve = %d, want the previous %d", got, prev)
	}
	if got := gcPercent(); got != prevGC {
		t.Errorf("GOGC after serve = %d, want the previous %d", got, prevGC)
	}
}
