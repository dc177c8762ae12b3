package natstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Shipped is a JetStream server whose only user has the publish
// permissions of carddrift's user in the shipped deployment
// (deployments/nats/accounts.conf), and a connection as that user.
type Shipped struct {
	JS jetstream.JetStream

	mu         sync.Mutex
	violations []error
	nc         *nats.Conn
}

// Violations flushes the connection and returns the permission violations
// the server reported to it so far.
func (s *Shipped) Violations() []error {
	_ = s.nc.Flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.violations...)
}

// StartShipped starts an embedded nats-server with one account whose user
// may publish exactly what the CARDDRIFT user of the accounts.conf at
// accountsConf (relative to the test's package) may, and connects as that
// user: the code under test needs nothing the shipped deployment does not
// grant.
func StartShipped(t testing.TB, accountsConf string) *Shipped {
	t.Helper()
	quoted := []string{}
	for _, s := range shippedPublishAllow(t, accountsConf) {
		quoted = append(quoted, fmt.Sprintf("%q", s))
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "nats.conf")
	text := fmt.Sprintf(`jetstream { store_dir: %q, max_file_store: 256MB }
accounts { CARDDRIFT { jetstream: enabled, users: [{user: carddrift, password: secret,
  permissions: {publish: {allow: [%s]}, subscribe: {allow: ["_INBOX.>"]}}}] } }
`, filepath.Join(dir, "js"), strings.Join(quoted, ", "))
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Shipped{}
	_, s.nc, s.JS = StartConf(t, file, nats.UserInfo("carddrift", "secret"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.violations = append(s.violations, err)
		}))
	return s
}

// shippedPublishAllow is the publish allow list of the CARDDRIFT user in
// the accounts.conf at path.
func shippedPublishAllow(t testing.TB, path string) []string {
	t.Helper()
	cfg, err := conf.ParseFile(path)
	if err != nil {
		t.Fatalf("accounts.conf: %v", err)
	}
	accts, _ := cfg["accounts"].(map[string]any)
	acct, _ := accts["CARDDRIFT"].(map[string]any)
	users, _ := acct["users"].([]any)
	if len(users) != 1 {
		t.Fatalf("accounts.conf: CARDDRIFT has %d users, want 1", len(users))
	}
	perms, _ := users[0].(map[string]any)["permissions"].(map[string]any)
	pub, _ := perms["publish"].(map[string]any)
	allow, _ := pub["allow"].([]any)
	var out []string
	for _, s := range allow {
		out = append(out, s.(string))
	}
	if len(out) == 0 {
		t.Fatalf("accounts.conf: CARDDRIFT's user may publish nothing")
	}
	return out
}
