package test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Helpers of the cluster test (cluster_test.go): the shipped deployment
// (deployments/nats/*.conf, accounts.conf and the certificates of
// deployments/tls/make-test-certs.sh) run as real nats-server processes.

// plannerAPIPrefix is the JetStream API prefix planners use
// (deployments/nats/accounts.conf: the PLANNERS account imports carddrift's
// API under it).
const plannerAPIPrefix = "JS.carddrift.API"

// The users of deployments/nats/accounts.conf, by the certificate the test
// script makes for each.
const (
	roleCarddrift     = "carddrift"
	roleClient        = "client"
	rolePlanner       = "planner"
	rolePlannersAdmin = "planners-admin"
)

// plannersStreamFile is the planners' copy of CARD_EVENTS, which an operator
// creates once in the PLANNERS account (deployments/README.md, "Planners").
const plannersStreamFile = "../deployments/nats/planners-card-events.json"

// provisionPlanners creates the planners' CARD_EVENTS from the shipped
// configuration, as the planners-admin user, as an operator does once.
func (c *natsCluster) provisionPlanners(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(plannersStreamFile)
	if err != nil {
		t.Fatal(err)
	}
	var sc jetstream.StreamConfig
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("%s: %v", plannersStreamFile, err)
	}
	nc, _ := c.connect(t, rolePlannersAdmin)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
		t.Fatalf("create the planners' %s as %s: %v", sc.Name, rolePlannersAdmin, err)
	}
}

// natsServerBinary returns a nats-server built from the module this
// repository depends on: CARDDRIFT_NATS_SERVER_BIN (.ci/run builds it once),
// else a build into a temporary directory.
func natsServerBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CARDDRIFT_NATS_SERVER_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("CARDDRIFT_NATS_SERVER_BIN: %v", err)
		}
		return bin
	}
	bin := filepath.Join(t.TempDir(), "nats-server")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	start := time.Now()
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/nats-io/nats-server/v2")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build github.com/nats-io/nats-server/v2: %v\n%s", err, out)
	}
	t.Logf("built nats-server in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// makeTestCerts runs the shipped deployments/tls/make-test-certs.sh into a
// temporary directory. It needs bash and openssl: without them the test
// skips locally and fails under CI.
func makeTestCerts(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"bash", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found: deployments/tls/make-test-certs.sh needs it", tool)
			}
			t.Skipf("%s not found: deployments/tls/make-test-certs.sh needs it", tool)
		}
	}
	dir := t.TempDir()
	out, err := exec.Command("bash", "../deployments/tls/make-test-certs.sh", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("make-test-certs.sh: %v\n%s", err, out)
	}
	return dir
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// natsNode is one nats-server process of the cluster.
type natsNode struct {
	name                   string // server_name: nats-1, nats-2, nats-3
	dir                    string // its configuration, accounts.conf and store
	client, route, monitor int
	monitorHost            string // the shipped monitoring host (http: HOST:8222)
	log                    string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

type natsCluster struct {
	t     *testing.T
	bin   string
	certs string
	nodes []*natsNode
}

// monitorListenRe is the monitoring listener of a shipped node configuration.
var monitorListenRe = regexp.MustCompile(`(?m)^http: (\S+):8222$`)

// startCluster runs deployments/nats/nats-{1,2,3}.conf as three processes,
// rewritten for the test: loopback ports, a temporary store, the test
// certificates. Everything else (TLS settings, accounts, users, permissions)
// is the shipped configuration. It waits until every node is healthy
// (JetStream current) and stops them when the test ends.
func startCluster(t *testing.T, bin, certs string) *natsCluster {
	t.Helper()
	c := startClusterNodes(t, bin, certs)
	c.waitAllHealthy()
	return c
}

// waitAllHealthy waits until every node is healthy. A loaded machine (CI
// runs every package's tests at once) has seen a fresh cluster take over
// 30 s to elect its meta leader.
func (c *natsCluster) waitAllHealthy() {
	c.t.Helper()
	for _, n := range c.nodes {
		c.waitHealthy(n, 90*time.Second)
	}
}

// startClusterNodes is startCluster without the wait: the processes are
// started, the cluster is still forming when it returns.
func startClusterNodes(t *testing.T, bin, certs string) *natsCluster {
	t.Helper()
	c := &natsCluster{t: t, bin: bin, certs: certs}
	base := t.TempDir()
	for i := 1; i <= 3; i++ {
		n := &natsNode{name: fmt.Sprintf("nats-%d", i), dir: filepath.Join(base, fmt.Sprintf("nats-%d", i)),
			client: freePort(t), route: freePort(t), monitor: freePort(t)}
		n.log = filepath.Join(n.dir, "nats-server.log")
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
	accounts, err := os.ReadFile("../deployments/nats/accounts.conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		conf := c.rewrite(n)
		if err := os.WriteFile(filepath.Join(n.dir, "nats.conf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(n.dir, "accounts.conf"), accounts, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.stop()
		}
		if t.Failed() {
			for _, n := range c.nodes {
				t.Logf("%s log (tail):\n%s", n.name, tail(n.log, 40))
			}
		}
	})
	for _, n := range c.nodes {
		if err := c.start(n); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// rewrite returns the shipped configuration of n with ports, paths and route
// URLs made local. It fails the test when the shipped file no longer has what
// it rewrites, or still names the container layout afterwards.
func (c *natsCluster) rewrite(n *natsNode) string {
	t := c.t
	src := filepath.Join("..", "deployments", "nats", n.name+".conf")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	repl := func(old, new string) {
		if !strings.Contains(s, old) {
			t.Fatalf("%s no longer contains %q: update the cluster test with it", src, old)
		}
		s = strings.ReplaceAll(s, old, new)
	}
	repl("listen: 0.0.0.0:4222", fmt.Sprintf("listen: 127.0.0.1:%d", n.client))
	// Monitoring keeps the host it is shipped with (only the port changes):
	// the adversary suite checks who can reach it.
	m := monitorListenRe.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%s has no monitoring listener %q: update the cluster test with it", src, monitorListenRe)
	}
	n.monitorHost = m[1]
	s = monitorListenRe.ReplaceAllString(s, fmt.Sprintf("http: %s:%d", m[1], n.monitor))
	repl("listen: 0.0.0.0:6222", fmt.Sprintf("listen: 127.0.0.1:%d", n.route))
	repl("store_dir: /data/jetstream", fmt.Sprintf("store_dir: %q", filepath.Join(n.dir, "jetstream")))
	repl("/etc/nats/tls/", c.certs+"/")
	for _, o := range c.nodes {
		repl("nats-route://"+o.name+":6222", fmt.Sprintf("nats-route://127.0.0.1:%d", o.route))
	}
	for _, line := range strings.Split(s, "\n") {
		line, _, _ = strings.Cut(line, "#") // comments may name the container layout
		for _, left := range []string{"0.0.0.0", "/data/", "/etc/nats", ":4222", ":6222", ":8222"} {
			if left == "0.0.0.0" && strings.HasPrefix(strings.TrimSpace(line), "http:") {
				continue // the monitoring host stays as shipped
			}
			if strings.Contains(line, left) {
				t.Fatalf("%s: %q is left after rewriting it for the test: %s", src, left, line)
			}
		}
	}
	for _, want := range []string{"verify_and_map: true", "include ./accounts.conf"} {
		if !strings.Contains(s, want) {
			t.Fatalf("%s lacks %q", src, want)
		}
	}
	return s
}

// start starts (or restarts) a node on its configuration and store, its
// output appended to its log. It does not touch the testing.T, so it may run
// on any goroutine.
func (c *natsCluster) start(n *natsNode) error {
	f, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.bin, "-c", filepath.Join(n.dir, "nats.conf"))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", n.name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		f.Close()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	return nil
}

// kill SIGKILLs the node and waits for it to exit. It does not touch the
// testing.T, so it may run on any goroutine.
func (n *natsNode) kill() error {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return errors.New(n.name + " not started")
	}
	if err := cmd.Process.Kill(); err != nil {
		return err
	}
	<-exited
	return nil
}

func (n *natsNode) stop() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
	default:
		cmd.Process.Kill()
		<-exited
	}
}

// healthy reports whether the node's monitoring /healthz answers 200
// (JetStream enabled and current with the cluster).
func (n *natsNode) healthy() bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.monitor))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (c *natsCluster) waitHealthy(n *natsNode, timeout time.Duration) {
	c.t.Helper()
	eventually(c.t, timeout, n.name+" healthy", n.healthy)
}

func (c *natsCluster) node(name string) *natsNode {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// urls is every node's client URL, as carddrift serve --nats-url takes them.
func (c *natsCluster) urls() string {
	var u []string
	for _, n := range c.nodes {
		u = append(u, fmt.Sprintf("tls://127.0.0.1:%d", n.client))
	}
	return strings.Join(u, ",")
}

// asyncErrors collects a connection's asynchronous errors (permission
// violations among them).
type asyncErrors struct {
	mu   sync.Mutex
	errs []error
}

func (a *asyncErrors) add(err error) {
	a.mu.Lock()
	a.errs = append(a.errs, err)
	a.mu.Unlock()
}

// violation returns the first permission violation whose text contains
// what, or nil.
func (a *asyncErrors) violation(what string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, err := range a.errs {
		if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), what) {
			return err
		}
	}
	return nil
}

// waitViolation waits until the server has refused what (a subject, quoted
// as in the server's error) on the connection.
func (a *asyncErrors) waitViolation(t *testing.T, what string) error {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := a.violation(what); err != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("the server did not refuse %s (async errors: %v)", what, a.errs)
	return nil
}

// connect dials the cluster as one of the shipped users: mutual TLS with the
// role's certificate from make-test-certs.sh.
func (c *natsCluster) connect(t *testing.T, role string) (*nats.Conn, *asyncErrors) {
	t.Helper()
	errs := &asyncErrors{}
	nc, err := nats.Connect(c.urls(),
		nats.Name("cluster-test "+role),
		nats.ClientCert(filepath.Join(c.certs, role+".pem"), filepath.Join(c.certs, role+"-key.pem")),
		nats.RootCAs(filepath.Join(c.certs, "ca.pem")),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs.add(err) }),
	)
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// violationsBy returns the permission violations the nodes logged for an
// account's users ("CARDDRIFT/user:…" in the server's log lines).
func (c *natsCluster) violationsBy(account string) []string {
	var out []string
	for _, n := range c.nodes {
		f, err := os.Open(n.log)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Violation") && strings.Contains(sc.Text(), `"`+account+`/user:`) {
				out = append(out, n.name+": "+sc.Text())
			}
		}
		f.Close()
	}
	return out
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// serveWithIdentity wraps the carddrift binary so that startServe (which
// passes the rig's flags) also passes --replicas 3 and carddrift's own
// certificate: the wrapper execs the binary with those flags appended, so
// the process startServe signals is carddrift itself.
func serveWithIdentity(t *testing.T, bin, certs string) string {
	t.Helper()
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	script := fmt.Sprintf("#!/bin/sh\nexec %s \"$@\" --replicas 3 --tls-ca %s --tls-cert %s --tls-key %s\n",
		q(bin), q(filepath.Join(certs, "ca.pem")), q(filepath.Join(certs, roleCarddrift+".pem")), q(filepath.Join(certs, roleCarddrift+"-key.pem")))
	w := filepath.Join(t.TempDir(), "carddrift-r3")
	if err := os.WriteFile(w, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// retryingPublisher counts what the client's Emitter publishes through it:
// the events acknowledged, the publishes again of an event (the emitter's
// retries, by Nats-Msg-Id) and the longest time from an event's first
// publish to its ack.
type retryingPublisher struct {
	jetstream.JetStream

	published atomic.Int64
	retries   atomic.Int64
	mu        sync.Mutex
	first     map[string]time.Time // Nats-Msg-Id → first publish; deleted once acknowledged
	stall     time.Duration        // longest time one event took to be acknowledged
}

func (p *retryingPublisher) PublishMsgAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	id := msg.Header.Get(jetstream.MsgIDHeader)
	p.mu.Lock()
	if p.first == nil {
		p.first = map[string]time.Time{}
	}
	if _, again := p.first[id]; again {
		p.retries.Add(1)
	} else {
		p.first[id] = time.Now()
	}
	p.mu.Unlock()
	f, err := p.JetStream.PublishMsgAsync(msg, opts...)
	if err != nil {
		return nil, err
	}
	c := countedAck{PubAckFuture: f, ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1)}
	go func() {
		select {
		case ack := <-f.Ok():
			p.mu.Lock()
			if start, ok := p.first[id]; ok {
				delete(p.first, id)
				p.published.Add(1)
				p.stall = max(p.stall, time.Since(start))
			}
			p.mu.Unlock()
			c.ok <- ack
		case err := <-f.Err():
			c.err <- err
		case <-time.After(2 * time.Minute): // an ack lost for good: the emitter gave up on it long ago
		}
	}()
	return c, nil
}

// countedAck is a PubAckFuture whose outcome retryingPublisher saw first.
type countedAck struct {
	jetstream.PubAckFuture
	ok  chan *jetstream.PubAck
	err chan error
}

func (c countedAck) Ok() <-chan *jetstream.PubAck { return c.ok }
func (c countedAck) Err() <-chan error            { return c.err }

func (p *retryingPublisher) longestStall() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stall
}

// foreignCert is a client certificate for subject CN=carddrift,O=carddrift
// that a CA other than the deployment's signed (self-signed).
func foreignCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "carddrift", Organization: []string{"carddrift"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// streamLeader returns the server that leads a stream, or "" when the
// question cannot be answered right now (no leader, a reconnect). It does
// not touch the testing.T.
func streamLeader(js jetstream.JetStream, stream string) string {
	info := streamInfo(js, stream)
	if info == nil || info.Cluster == nil {
		return ""
	}
	return info.Cluster.Leader
}

// replicaCurrent reports whether server holds a current copy of a stream:
// it leads it, or it is a replica that is online, current and not behind.
func replicaCurrent(js jetstream.JetStream, stream, server string) bool {
	info := streamInfo(js, stream)
	if info == nil || info.Cluster == nil {
		return false
	}
	if info.Cluster.Leader == server {
		return true
	}
	for _, p := range info.Cluster.Replicas {
		if p.Name == server {
			return p.Current && !p.Offline && p.Lag == 0
		}
	}
	return false
}

func streamInfo(js jetstream.JetStream, stream string) *jetstream.StreamInfo {
	// A request answered within 10 s: 1 s, under -race on a busy machine,
	// timed out often enough to run out the eventually around it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil
	}
	return s.CachedInfo()
}

// plainConnect speaks the NATS protocol without TLS to a client port and
// returns an error unless the server refuses it: it must announce
// tls_required and answer CONNECT with an error or a closed connection,
// never a PONG.
func plainConnect(port int) error {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(conn)
	info, err := rd.ReadString('\n')
	if err != nil {
		return fmt.Errorf("plain TCP: no INFO: %v", err)
	}
	if !strings.Contains(info, `"tls_required":true`) {
		return fmt.Errorf("plain TCP: INFO without tls_required: %s", info)
	}
	if _, err := conn.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\n")); err != nil {
		return nil // refused already
	}
	for {
		line, err := rd.ReadString('\n')
		if err != nil || strings.HasPrefix(line, "-ERR") {
			return nil
		}
		if strings.HasPrefix(line, "PONG") {
			return errors.New("plain TCP: the server answered PING without TLS")
		}
	}
}
