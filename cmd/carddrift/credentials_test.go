package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeAgentCredentialsRefused: serve refuses a credentials file that
// does not parse, with a usage error that names what is wrong and never the
// value, whether given by flag or by CARDDRIFT_AGENT_CREDENTIALS.
func TestServeAgentCredentialsRefused(t *testing.T) {
	const secret = "Bearer serve-flag-secret-41c9"
	dir := t.TempDir()
	bad := filepath.Join(dir, "creds.json")
	if err := os.WriteFile(bad, []byte(`{"https://agent.example": {"headers": {"Authorization": "`+secret+`\u0007"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{"flag", []string{"serve", "--agent-credentials", bad}, ""},
		{"environment", []string{"serve"}, bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("CARDDRIFT_AGENT_CREDENTIALS", tc.env)
			}
			code, stdout, stderr := runCLI(t, "", tc.args...)
			if code != exitUsage || !strings.Contains(stderr, "--agent-credentials") || !strings.Contains(stderr, "bad header") {
				t.Errorf("serve = %d, stderr:\n%s\nwant a usage error naming the bad header", code, stderr)
			}
			if strings.Contains(stdout+stderr, "serve-flag-secret") {
				t.Errorf("the secret is in serve's output:\n%s%s", stdout, stderr)
			}
		})
	}
	if code, _, stderr := runCLI(t, "", "serve", "--agent-credentials", filepath.Join(dir, "none.json")); code != exitUsage {
		t.Errorf("a missing credentials file: %d\n%s", code, stderr)
	}
}
