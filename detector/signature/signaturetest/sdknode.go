package signaturetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SDKNode returns the node binary that runs @a2a-js/sdk as installed under
// dir (test/interop, from the calling test's package; `npm ci --prefix
// test/interop`). Without node or the SDK it skips the test, or fails it
// under CI.
func SDKNode(t testing.TB, dir string) string {
	t.Helper()
	var why string
	node, err := exec.LookPath("node")
	if err != nil {
		why = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		why = "test/interop/node_modules is missing (run: npm ci --prefix test/interop)"
	}
	if why == "" {
		return node
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("interop with @a2a-js/sdk cannot run: %s; CI must run it", why)
	}
	t.Skipf("interop with @a2a-js/sdk skipped: %s (under CI this fails)", why)
	return ""
}
