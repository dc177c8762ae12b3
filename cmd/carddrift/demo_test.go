package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/carddrift/carddrift/events/fleet"
)

// TestDemoScorecard runs the demo as CI does: fixed seed, short duration, and
// asserts its scorecard — nothing missed, nothing falsely aborted, every
// scenario exercised — and that it leaves no files behind.
func TestDemoScorecard(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo runs for 20s; skipped with -short")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	start := time.Now()
	code, stdout, stderr := runCLI(t, "", "demo", "--duration", "20s", "--seed", "7", "--json")
	elapsed := time.Since(start)
	var card fleet.Scorecard
	if err := json.Unmarshal([]byte(stdout), &card); err != nil {
		t.Fatalf("demo --json output is not a scorecard: %v\n%s\n%s", err, stdout, stderr)
	}
	if code != exitOK {
		t.Errorf("demo exit %d, want 0; problems: %+v", code, card.Problems)
	}
	if card.Missed != 0 || card.FalseAborts != 0 || card.UnreachableAsDrift != 0 {
		t.Errorf("scorecard missed %d, false aborts %d, unreachable as drift %d: %+v", card.Missed, card.FalseAborts, card.UnreachableAsDrift, card.Problems)
	}
	if card.Injected == 0 || card.Detected != card.Injected {
		t.Errorf("scorecard injected %d, detected %d", card.Injected, card.Detected)
	}
	for _, name := range fleet.ScenarioNames() {
		s, ok := card.Scenarios[name]
		if !ok || !s.Exercised {
			t.Errorf("scenario %s not exercised: %+v", name, s)
		}
	}
	if card.EventsPerSecond <= 0 || card.LatencyMs.P99 <= 0 || card.FetchesPerAgentPerLease <= 0 {
		t.Errorf("scorecard figures missing: %+v", card)
	}
	// The demo judges once carddrift has drained its backlog (bounded by 3
	// minutes); this only catches a demo that hangs.
	if elapsed > 4*time.Minute {
		t.Errorf("demo took %s for a 20s duration", elapsed)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("demo left %d file(s) in the temp dir: %v", len(left), left[0].Name())
	}
}

// recordDemo runs a 12s demo with args (skipped with -short) that records
// its store in a new directory; it returns the directory and the demo's exit
// status and output.
func recordDemo(t *testing.T, args ...string) (dir string, code int, stdout, stderr string) {
	t.Helper()
	if testing.Short() {
		t.Skip("records a 12s demo run; skipped with -short")
	}
	dir = filepath.Join(t.TempDir(), "store")
	code, stdout, stderr = runCLI(t, "", append([]string{"demo", "--duration", "12s", "--data-dir", dir, "--json", "--log-level", "error"}, args...)...)
	return dir, code, stdout, stderr
}

func TestDemoUsage(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--agents", "0"},
		{"demo", "--duration", "1s"},
		{"demo", "--scenarios", "no-such-scenario"},
		{"simulate", "--duration", "1s"},
	} {
		if code, _, _ := runCLI(t, "", args...); code != exitUsage {
			t.Errorf("carddrift %v = %d, want %d", args, code, exitUsage)
		}
	}
}
