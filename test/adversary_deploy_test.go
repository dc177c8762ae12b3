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
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store"
)

// The adversary suite's deployment rows (issue 19, rows 1 and 10), run
// against the shipped deployment as the cluster test runs it: the three
// nats-server processes of deployments/nats/*.conf with the certificates of
// deployments/tls/make-test-certs.sh.
//
//   - TestAdversaryRouteIdentity: every certificate a client, planner,
//     worker or operator holds tries to join the cluster as a route (a
//     fourth nats-server whose cluster block presents it) and publishes a
//     forged card.drift through it; the route identity does the same and
//     must join, which shows the probe would see a join.
//   - TestAdversaryMonitoring: NATS monitoring answers on loopback only.
//   - TestAdversaryPlannerPushConsumer: a planner's push consumers on
//     CARD_EVENTS aimed at every subject of carddrift's account change
//     nothing there.

// rogueNode is a nats-server that is not part of the deployment: it
// solicits a route to node 1 of the cluster with a certificate of its
// choice, and has a user of its own in an account named CARDDRIFT, through
// which it publishes whatever it likes.
type rogueNode struct {
	*natsNode
}

const rogueUser, roguePassword = "forger", "forger"

// startRogue starts a rogue node presenting cert/key on its route
// connection; caFile is what it trusts of the cluster's side (everything
// public: both CAs), so that its own verification is never why it fails.
func startRogue(t *testing.T, cl *natsCluster, name, cert, key, caFile string) *rogueNode {
	t.Helper()
	n := &natsNode{name: "rogue-" + name, dir: t.TempDir(), client: freePort(t), route: freePort(t), monitor: freePort(t)}
	n.log = filepath.Join(n.dir, "nats-server.log")
	conf := fmt.Sprintf(`server_name: %q
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
accounts {
  CARDDRIFT { users: [{user: %q, password: %q}] }
}
cluster {
  name: carddrift
  listen: 127.0.0.1:%d
  tls {
    cert_file: %q
    key_file: %q
    ca_file: %q
    timeout: 5
  }
  routes: [nats-route://127.0.0.1:%d]
}
`, n.name, n.client, n.monitor, rogueUser, roguePassword, n.route, cert, key, caFile, cl.nodes[0].route)
	if err := os.WriteFile(filepath.Join(n.dir, "nats.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cl.start(n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.stop()
		if t.Failed() {
			t.Logf("%s log (tail):\n%s", n.name, tail(n.log, 20))
		}
	})
	eventually(t, 20*time.Second, n.name+" monitoring up", func() bool { _, err := n.routes(); return err == nil })
	return &rogueNode{n}
}

// routes is the number of routes the node has (monitoring /routez).
func (n *natsNode) routes() (int, error) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/routez", n.monitor))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var rz struct {
		NumRoutes int `json:"num_routes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rz); err != nil {
		return 0, err
	}
	return rz.NumRoutes, nil
}

// routeRefusals counts the lines of a node's log after offset that record
// a route connection refused (a failed TLS handshake or a failed
// authorization), and returns the last one's text after the connection id.
func routeRefusals(path string, offset int) (int, string) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < offset {
		return 0, ""
	}
	var n int
	var last string
	for _, line := range strings.Split(string(b[offset:]), "\n") {
		if !strings.Contains(line, "rid:") {
			continue
		}
		l := strings.ToLower(line)
		if strings.Contains(l, "handshake error") || strings.Contains(l, "authorization") || strings.Contains(l, "authentication") {
			n++
			_, last, _ = strings.Cut(line, "rid:")
		}
	}
	return n, last
}

func fileSize(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return int(fi.Size())
}

// routeOutcome is what one identity got when it tried to join.
type routeOutcome struct {
	joined    bool   // the rogue node had a route to the cluster
	delivered int    // forged card.drift the planner received through it
	refusals  int    // refusals node 1 logged meanwhile
	why       string // the last of them
}

// tryJoin starts a rogue node with cert/key, waits until it has a route or
// node 1 has refused it twice, and then publishes forged card.drift events
// through it for a while (until one reaches the planner, when it joined).
func tryJoin(t *testing.T, cl *natsCluster, planner *nats.Subscription, name, cert, key, caFile string) routeOutcome {
	t.Helper()
	offset := fileSize(cl.nodes[0].log)
	r := startRogue(t, cl, name, cert, key, caFile)
	var out routeOutcome
	// A refused route is up for a moment (created, then closed on the
	// authorization violation): a join is a route still up 1.5 s later
	// with no refusal logged in between.
	joined := func() bool {
		if n, err := r.routes(); err != nil || n == 0 {
			return false
		}
		before, _ := routeRefusals(cl.nodes[0].log, offset)
		time.Sleep(1500 * time.Millisecond)
		n, err := r.routes()
		after, _ := routeRefusals(cl.nodes[0].log, offset)
		return err == nil && n > 0 && after == before
	}
	eventually(t, 30*time.Second, name+": a route, or two refusals by nats-1", func() bool {
		if joined() {
			out.joined = true
			return true
		}
		out.refusals, out.why = routeRefusals(cl.nodes[0].log, offset)
		return out.refusals >= 2
	})

	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", r.client), nats.UserInfo(rogueUser, roguePassword))
	if err != nil {
		t.Fatalf("%s: connect to the rogue node: %v", name, err)
	}
	defer nc.Close()
	subject := "card.drift.forged." + strings.ReplaceAll(name, " ", "-")
	// Refused: 3 s of forgeries, none may arrive. Joined: until one does
	// (interest crosses the new route within a moment).
	window := 3 * time.Second
	if out.joined {
		window = 30 * time.Second
	}
	deadline := time.Now().Add(window)
	for time.Now().Before(deadline) && out.delivered == 0 {
		must(t, nc.Publish(subject, []byte(`{"specversion":"1.0","type":"card.drift","source":"forged","id":"forged"}`)))
		must(t, nc.Flush())
		for {
			m, err := planner.NextMsg(100 * time.Millisecond)
			if err != nil {
				break
			}
			if m.Subject == subject {
				out.delivered++
			}
		}
		if !out.joined && joined() {
			out.joined = true
		}
	}
	if !out.joined {
		out.refusals, out.why = routeRefusals(cl.nodes[0].log, offset)
	}
	return out
}

// TestAdversaryRouteIdentity (issue 19 row 1): on e91b0a3 the cluster port
// trusted the clients' CA with no route authorization, so the a2a-client
// certificate joined as a route and a card.drift forged through it reached
// a planner. Now the cluster port trusts only the route CA and maps the
// route certificate's subject to the one route user: every other identity
// is refused and nothing it publishes reaches the cluster; the route
// identity still joins.
func TestAdversaryRouteIdentity(t *testing.T) {
	cl := startCluster(t, "runs a 3-node nats-server cluster and rogue nodes")

	pnc, _ := cl.connect(t, rolePlanner)
	forged, err := pnc.SubscribeSync("card.drift.forged.>")
	if err != nil {
		t.Fatal(err)
	}
	must(t, pnc.Flush())

	// The rogue trusts every CA the deployment publishes.
	var bundle []byte
	for _, f := range []string{"ca.pem", "route-ca.pem"} {
		if b, err := os.ReadFile(filepath.Join(cl.certs, f)); err == nil {
			bundle = append(bundle, b...)
		}
	}
	caFile := filepath.Join(t.TempDir(), "bundle.pem")
	must(t, os.WriteFile(caFile, bundle, 0o644))

	pem := func(name string) (string, string) {
		return filepath.Join(cl.certs, name+".pem"), filepath.Join(cl.certs, name+"-key.pem")
	}
	for _, id := range []struct{ name, file string }{
		{"carddrift (CN=carddrift)", roleCarddrift},
		{"a2a-client (CN=a2a-client)", roleClient},
		{"planner (CN=planner)", rolePlanner},
		{"operator (CN=nats-admin)", "admin"},
		{"client-port server certificate", "server"},
	} {
		t.Run(id.file, func(t *testing.T) {
			cert, key := pem(id.file)
			out := tryJoin(t, cl, forged, id.file, cert, key, caFile)
			if out.joined || out.delivered > 0 {
				t.Errorf("%s joined the cluster as a route: %d forged card.drift reached the planner", id.name, out.delivered)
				return
			}
			t.Logf("%s: refused (%d refusals logged by nats-1, no route, 0 forged card.drift delivered): rid:%s", id.name, out.refusals, out.why)
		})
	}

	// nats-server's own TLS client sends no certificate the cluster port's
	// CA list does not name; a hand-made client sends it anyway, and the
	// handshake still fails.
	t.Run("forced-client-certificate", func(t *testing.T) {
		for _, role := range []string{roleClient, rolePlanner, roleCarddrift, "admin", "server"} {
			cert, key := pem(role)
			if err := rawRouteHandshake(cl.nodes[0].route, cert, key, caFile); err == nil {
				t.Errorf("%s certificate, sent regardless of the CA list: the route port answered PING", role)
			} else {
				t.Logf("%s certificate, sent regardless of the CA list: refused: %v", role, err)
			}
		}
		// The same handshake with the route certificate is answered: the
		// probe tells a refusal from a broken probe.
		cert, key := pem("route")
		if err := rawRouteHandshake(cl.nodes[0].route, cert, key, caFile); err != nil {
			t.Errorf("route certificate by hand: %v, want PONG", err)
		}
	})

	// A certificate of the route CA with a client's subject (as if the route
	// CA signed one by mistake): the handshake passes, authorization does not.
	t.Run("route-ca-other-subject", func(t *testing.T) {
		cert, key, err := signWithRouteCA(cl.certs, t.TempDir(), "a2a-client")
		if err != nil {
			t.Fatalf("no route CA to sign with (make-test-certs.sh makes route-ca.pem): %v", err)
		}
		out := tryJoin(t, cl, forged, "route-ca-a2a-client", cert, key, caFile)
		if out.joined || out.delivered > 0 {
			t.Errorf("CN=a2a-client from the route CA joined as a route: %d forged card.drift delivered", out.delivered)
			return
		}
		t.Logf("CN=a2a-client from the route CA: refused (%d refusals logged by nats-1): rid:%s", out.refusals, out.why)
	})

	// The route identity joins: the probe sees a join when there is one.
	t.Run("route", func(t *testing.T) {
		cert, key := pem("route")
		if _, err := os.Stat(cert); err != nil {
			t.Fatalf("no route certificate: %v", err)
		}
		out := tryJoin(t, cl, forged, "route", cert, key, caFile)
		if !out.joined || out.delivered == 0 {
			t.Errorf("the route identity did not join: joined %v, %d card.drift delivered", out.joined, out.delivered)
			return
		}
		t.Logf("route identity (CN=nats-route, route CA): joined, its card.drift reached the planner")
	})
}

// rawRouteHandshake speaks the route protocol to a cluster port by hand:
// the server's INFO, a TLS handshake that presents cert whatever CAs the
// server names, CONNECT and PING. It returns nil only if the server answers
// PONG, that is, accepted the route.
func rawRouteHandshake(port int, certFile, keyFile, caFile string) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if b, err := os.ReadFile(caFile); err != nil || !pool.AppendCertsFromPEM(b) {
		return fmt.Errorf("ca %s: %v", caFile, err)
	}
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	// A route port does TLS first, then INFO.
	tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1",
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }})
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	rd := bufio.NewReader(tc)
	if _, err := rd.ReadString('\n'); err != nil {
		return fmt.Errorf("no INFO: %w", err)
	}
	if _, err := tc.Write([]byte("CONNECT {\"verbose\":false,\"name\":\"rogue\",\"cluster\":\"carddrift\"}\r\nPING\r\n")); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if strings.HasPrefix(line, "-ERR") {
			return errors.New(strings.TrimSpace(line))
		}
		if strings.HasPrefix(line, "PONG") {
			return nil
		}
	}
}

// signWithRouteCA issues a route-CA certificate for CN=<cn>,O=carddrift
// (serverAuth and clientAuth, SAN 127.0.0.1) into dir.
func signWithRouteCA(certs, dir, cn string) (string, string, error) {
	caPEM, err := os.ReadFile(filepath.Join(certs, "route-ca.pem"))
	if err != nil {
		return "", "", err
	}
	keyPEM, err := os.ReadFile(filepath.Join(certs, "route-ca-key.pem"))
	if err != nil {
		return "", "", err
	}
	cb, _ := pem.Decode(caPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return "", "", errors.New("route CA: no PEM block")
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return "", "", err
	}
	caKey, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"carddrift"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	cert, keyFile := filepath.Join(dir, cn+".pem"), filepath.Join(dir, cn+"-key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return "", "", err
	}
	return cert, keyFile, nil
}

// nonLoopbackAddrs returns this machine's addresses other than loopback
// and link-local: what another host of the network would dial.
func nonLoopbackAddrs() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() || ipn.IP.IsLinkLocalMulticast() {
			continue
		}
		out = append(out, ipn.IP)
	}
	return out
}

// TestAdversaryMonitoring (issue 19 row 10): on e91b0a3 the nodes served
// monitoring (/varz, /connz with every client's name and address, /jsz,
// /accountz) on 0.0.0.0:8222 without any login. The shipped nodes now
// listen for monitoring on loopback only: from this machine's other
// addresses the port refuses connections, while loopback still answers
// /healthz (the container health check).
func TestAdversaryMonitoring(t *testing.T) {
	cl := startCluster(t, "runs a 3-node nats-server cluster")

	addrs := nonLoopbackAddrs()
	hc := http.Client{Timeout: 2 * time.Second}
	for _, n := range cl.nodes {
		ip := net.ParseIP(n.monitorHost)
		if n.monitorHost != "localhost" && (ip == nil || !ip.IsLoopback()) {
			t.Errorf("%s: monitoring listens on %s (no login): reachable beyond loopback", n.name, n.monitorHost)
		}
		if !n.healthy() {
			t.Errorf("%s: /healthz on loopback does not answer", n.name)
		}
		for _, a := range addrs {
			url := fmt.Sprintf("http://%s/varz", net.JoinHostPort(a.String(), fmt.Sprint(n.monitor)))
			resp, err := hc.Get(url)
			if err == nil {
				resp.Body.Close()
				t.Errorf("%s: %s answered %s without credentials", n.name, url, resp.Status)
				continue
			}
			t.Logf("%s: %s refused: %v", n.name, url, err)
		}
	}
	if len(addrs) == 0 {
		// Only loopback here: the listener's host above is the check.
		t.Logf("no non-loopback address on this machine: checked the listener's host only")
	}
}

// TestAdversaryPlannerPushConsumer (issue 19 row 10): on e91b0a3 a
// planner created its consumers on carddrift's own CARD_EVENTS (through
// service imports of carddrift's JetStream API), so a push consumer's
// deliver subject was a subject of carddrift's account, where carddrift's
// streams, buckets, JetStream API and connections' inboxes listen. Harmless
// only because the server delivers to a push consumer's subject only while
// a subscription with exactly that subject exists (carddrift's streams and
// buckets listen on wildcards); a carddrift inbox known by name was reached.
//
// Now planners consume their own copy of CARD_EVENTS in their own account
// (deployments/nats/planners-card-events.json, sourced by the PLANNERS
// account's JetStream), under the same API prefix. The test aims push
// consumers at every subject of carddrift's account, and at a carddrift
// connection's inbox, and checks that no consumer appears on carddrift's
// CARD_EVENTS, the inbox receives nothing, nothing changes in carddrift's
// streams and buckets, and a planner cannot reach carddrift's JetStream API
// under the prefix its account's JetStream sources through.
func TestAdversaryPlannerPushConsumer(t *testing.T) {
	cl := startCluster(t, "runs a 3-node nats-server cluster")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cdnc, _ := cl.connect(t, roleCarddrift)
	cdjs, err := jetstream.New(cdnc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := store.DefaultConfig()
	cfg.Replicas = 3
	if err := store.Provision(ctx, cdjs, cfg); err != nil {
		t.Fatal(err)
	}
	// Verdicts on the card stream, as carddrift publishes them.
	const verdicts = 5
	for i := range verdicts {
		if _, err := cdjs.Publish(ctx, fmt.Sprintf("card.drift.probe.t%d", i), []byte(`{"probe":true}`)); err != nil {
			t.Fatal(err)
		}
	}
	pnc, pjs, perrs := plannerJS(t, cl)
	if _, err := os.Stat(plannersStreamFile); err == nil {
		cl.provisionPlanners(t)
		// The planners' copy has every verdict: its source consumer runs.
		var last *jetstream.StreamInfo
		t.Cleanup(func() {
			if t.Failed() && last != nil {
				b, _ := json.Marshal(last)
				t.Logf("the planners' %s: %s", cfg.EventsStream, b)
			}
		})
		eventually(t, 30*time.Second, "the planners' CARD_EVENTS to hold every verdict", func() bool {
			last = streamInfo(pjs, cfg.EventsStream)
			return last != nil && last.State.Msgs == verdicts
		})
	} else {
		t.Logf("no %s: planners use carddrift's CARD_EVENTS", plannersStreamFile)
	}

	streams := []string{cfg.LifecycleStream, cfg.EventsStream, cfg.DLQStream,
		"KV_" + cfg.PinsBucket, "KV_" + cfg.CardsBucket, "KV_" + cfg.LeasesBucket, "OBJ_" + cfg.CardsObjectBucket}
	count := func() (map[string]uint64, int) {
		m := map[string]uint64{}
		for _, s := range streams {
			if info := streamInfo(cdjs, s); info != nil {
				m[s] = info.State.Msgs
			} else {
				m[s] = ^uint64(0) // gone (or unanswered)
			}
		}
		consumers := -1
		if info := streamInfo(cdjs, cfg.EventsStream); info != nil {
			consumers = info.State.Consumers
		}
		return m, consumers
	}
	before, consumersBefore := count()

	// The sentinel: a carddrift connection's own literal inbox, the one
	// kind of subscription in carddrift's account a push consumer reached.
	inbox := cdnc.NewInbox()
	sentinel, err := cdnc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	must(t, cdnc.Flush())
	targets := []string{
		inbox,
		"a2a.task.submitted.victim", // the lifecycle stream
		"carddrift.dlq.victim",      // the dead letters
		"$KV." + cfg.PinsBucket + ".victim", "$KV." + cfg.CardsBucket + ".victim", "$KV." + cfg.LeasesBucket + ".victim",
		"$O." + cfg.CardsObjectBucket + ".M.victim",
		"$JS.API.STREAM.PURGE." + cfg.LifecycleStream, "$JS.API.STREAM.DELETE." + cfg.DLQStream,
		"$JS.API.CONSUMER.DELETE." + cfg.LifecycleStream + "." + cfg.ConsumerNameOf(0),
		"$JS.API.INFO", "$JS.API.DIRECT.GET.KV_" + cfg.PinsBucket,
	}
	created := 0
	for i, d := range targets {
		_, err := pjs.CreateOrUpdateConsumer(ctx, cfg.EventsStream, jetstream.ConsumerConfig{
			Durable: fmt.Sprintf("push-%d", i), DeliverSubject: d, AckPolicy: jetstream.AckNonePolicy})
		if err != nil {
			t.Logf("push consumer delivering to %s: refused: %v", d, err)
			continue
		}
		created++
	}
	// The consumers deliver from the stream's start: what reaches the inbox
	// does within moments. Read for a while, as a worker would.
	var reached int
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && reached < verdicts {
		if _, err := sentinel.NextMsg(200 * time.Millisecond); err == nil {
			reached++
		}
	}
	if reached > 0 {
		t.Errorf("a planner's push consumer delivered %d of %d verdicts into carddrift's inbox %s", reached, verdicts, inbox)
	}

	// What each consumer did, as the planner sees it (jetstream.Consumer
	// refuses to bind a push consumer: ask the API).
	var report []string
	for i, d := range targets {
		m, err := pnc.Request(fmt.Sprintf("%s.CONSUMER.INFO.%s.push-%d", plannerAPIPrefix, cfg.EventsStream, i), nil, 5*time.Second)
		var info jetstream.ConsumerInfo
		if err != nil || json.Unmarshal(m.Data, &info) != nil {
			report = append(report, fmt.Sprintf("%s: no info (%v)", d, err))
			continue
		}
		report = append(report, fmt.Sprintf("%s: %d delivered, %d pending", d, info.Delivered.Consumer, info.NumPending))
	}
	t.Logf("push consumers (%d of %d created):\n  %s", created, len(targets), strings.Join(report, "\n  "))

	after, consumersAfter := count()
	if consumersAfter > consumersBefore {
		t.Errorf("carddrift's %s: %d consumers before the planner's push consumers, %d after: they live in carddrift's account",
			cfg.EventsStream, consumersBefore, consumersAfter)
	}
	for _, s := range streams {
		if after[s] != before[s] {
			t.Errorf("stream %s: %d messages before the planner's push consumers, %d after", s, before[s], after[s])
		}
	}
	for _, b := range []string{cfg.PinsBucket, cfg.CardsBucket, cfg.LeasesBucket} {
		kv, err := cdjs.KeyValue(ctx, b)
		if err != nil {
			t.Errorf("bucket %s: %v", b, err)
			continue
		}
		if e, err := kv.Get(ctx, "victim"); err == nil {
			t.Errorf("bucket %s: key victim written through a push consumer: %q", b, e.Value())
		}
	}

	// carddrift's JetStream API under the prefix the PLANNERS account's
	// JetStream sources through: refused to a planner.
	must(t, pnc.Publish("JS.carddrift-source.API.CONSUMER.CREATE."+cfg.EventsStream+".steal", []byte(`{}`)))
	must(t, pnc.Flush())
	if err := perrs.waitViolation(t, `"JS.carddrift-source.API.CONSUMER.CREATE.`+cfg.EventsStream+`.steal"`); err != nil {
		t.Logf("planner on the source prefix: %v", err)
	}
	t.Logf("carddrift's %s: %d consumers before, %d after; carddrift's streams: %v", cfg.EventsStream, consumersBefore, consumersAfter, after)
}
