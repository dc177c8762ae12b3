package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/storetest"
)

// shippedPublishAllow is the publish allow list of carddrift's user in the
// shipped deployment (deployments/nats/accounts.conf).
func shippedPublishAllow(t *testing.T) []string {
	t.Helper()
	cfg, err := conf.ParseFile(filepath.Join("..", "deployments", "nats", "accounts.conf"))
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
	var out []string
	for _, s := range pub["allow"].([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestStorageJobsUnderShippedPermissions: provisioning with byte limits,
// the Monitor and CardsGC (a large body included) need nothing the
// shipped CARDDRIFT user may not publish.
func TestStorageJobsUnderShippedPermissions(t *testing.T) {
	allow := shippedPublishAllow(t)
	quoted := make([]string, len(allow))
	for i, s := range allow {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "nats.conf")
	text := fmt.Sprintf(`listen: "127.0.0.1:-1"
jetstream { store_dir: %q, max_file_store: 256MB }
accounts { CARDDRIFT { jetstream: enabled, users: [{user: carddrift, password: secret,
  permissions: {publish: {allow: [%s]}, subscribe: {allow: ["_INBOX.>"]}}}] } }
`, filepath.Join(dir, "js"), strings.Join(quoted, ", "))
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(file)
	if err != nil {
		t.Fatalf("ProcessConfigFile: %v", err)
	}
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	var violations []error
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("carddrift", "secret"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations = append(violations, err) }))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	cfg := store.Config{StorageLimit: 96 << 20, CardsInlineMax: 1 << 10}
	st, err := store.Open[storetest.Record](ctx, js, cfg)
	if err != nil {
		t.Fatalf("Open() under the shipped permissions: %v", err)
	}
	mon, err := store.NewMonitor(js, cfg, store.MonitorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mon.Check(ctx); err != nil {
		t.Fatalf("Monitor.Check() under the shipped permissions: %v", err)
	}
	large := []byte(`{"name":"large","description":"` + strings.Repeat("L", 4<<10) + `"}`)
	small := []byte(`{"name":"small"}`)
	for _, b := range [][]byte{large, small} {
		if err := st.Cards.Put(ctx, digestOf(b), b); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	if _, err := st.Leases.Create(ctx, store.Lease{CardURL: "https://a.example.com/card", Digest: digestOf(small)}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(2 * time.Hour)
	gc, err := store.NewCardsGC(js, st.Cards, store.GCOptions{
		References: store.PinLeaseReferences(st.Pins, func(r storetest.Record) []string { return []string{r.Digest} }, st.Leases),
		Now:        func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for range 2 {
		res, err := gc.Sweep(ctx)
		if err != nil {
			t.Fatalf("Sweep() under the shipped permissions: %v", err)
		}
		removed += res.Removed
	}
	if removed != 1 {
		t.Fatalf("two sweeps removed %d bodies, want 1 (the large one)", removed)
	}
	if _, err := st.Cards.Get(ctx, digestOf(large)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(large) = %v, want ErrNotFound", err)
	}
	nc.Flush()
	if len(violations) > 0 {
		t.Fatalf("permission violations: %v", violations)
	}
}
