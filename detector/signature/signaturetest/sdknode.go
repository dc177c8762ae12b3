package signaturetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SDKNode returns the node binary that runs @a2a-js/sdk as installed under
// dir, the npm project test/interop (package.json pins the SDK; `npm ci
// --prefix test/interop` installs it), given as a path from the calling
// test's package. The signature tests cross-check canonical forms and
// signatures with it; the interop suites in test/ run its agent. When node or the SDK
// is missing it skips the test, or fails it when CI is set: CI must run the
// interop tests.
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
