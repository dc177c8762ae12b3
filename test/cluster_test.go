package test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/client"
	"github.com/carddrift/carddrift/events/client/planner"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/store"
)

// The shipped deployment, run: a 3-node NATS cluster from
// deployments/nats/*.conf (mutual TLS on client and route connections, the
// accounts, users and permissions of accounts.conf, the certificates of
// deployments/tls/make-test-certs.sh), two `carddrift serve --replicas 3`
// processes holding only carddrift's certificate, A2A clients and a planner
// holding theirs.
//
//   - leader-killed-mid-burst: the leader of the lifecycle stream is
//     SIGKILLed while clients publish a burst of lifecycle events, and
//     restarted: no lifecycle event lost or stored twice, every task's
//     card.pinned and card.drift published once, nothing left unacknowledged
//     or dead-lettered, and a planner's own durable consumer sees every
//     verdict.
//   - permissions: the server refuses a client's card.drift, a planner's
//     a2a.task.submitted and what else they may not do; a reply subject
//     cannot smuggle a message onto the card stream; no entry without the
//     deployment's certificates.
//   - carddrift-stores: carddrift's identity reaches its object store (large
//     card bodies), which the burst does not exercise.
//   - dead-letter: a malformed lifecycle event reaches the dead-letter stream
//     (carddrift may publish there), which the burst does not exercise either.
//
// Throughout, carddrift runs with its own permissions only: the test fails
// if any node logged a permission violation by the carddrift user.

const (
	clusterAgents        = 12
	clusterTasksPerAgent = 8
	// clusterDownFor is how long the killed node stays down once a new
	// leader is elected.
	clusterDownFor = 2 * time.Second
)

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node nats-server cluster and two carddrift serve processes")
	}
	start := time.Now()
	natsBin := natsServerBinary(t)
	certs := makeTestCerts(t)
	bin := serveWithIdentity(t, buildCarddrift(t), certs)
	// The workers start with the servers, as a rollout starts them: not
	// after the meta leader answers. Each waits (not ready, saying what
	// for) until the cluster can hold its R3 streams.
	cl := startClusterNodes(t, natsBin, certs)
	serves := []*serveProc{startServeEarly(t, bin, cl.urls(), "serve-1"), startServeEarly(t, bin, cl.urls(), "serve-2")}
	cl.waitAllHealthy()
	t.Logf("3-node cluster healthy %v after the test started (builds included)", time.Since(start).Round(time.Millisecond))
	for _, p := range serves {
		p.waitConsuming(t, 3*time.Minute)
	}
	t.Logf("both workers consuming %v after the test started", time.Since(start).Round(time.Millisecond))
	// The planners' own CARD_EVENTS, sourced from carddrift's, which serve
	// created.
	cl.provisionPlanners(t)

	// startServe's stream layout (4 partitions, AckWait 2s), with the
	// wrapper's --replicas 3.
	cfg := testConfig()
	cfg.Replicas = 3

	// The test observes the streams and consumers as carddrift (stream and
	// consumer info) and reads verdicts as a planner. The rig has no stores:
	// the workers are the serve processes.
	cdnc, _ := cl.connect(t, roleCarddrift)
	cdjs, err := jetstream.New(cdnc)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, js: cdjs, nc: cdnc, cfg: cfg}

	t.Run("leader-killed-mid-burst", func(t *testing.T) { testClusterLeaderKilled(t, cl, r, serves) })
	t.Run("permissions", func(t *testing.T) { testClusterPermissions(t, cl, r) })
	t.Run("carddrift-stores", func(t *testing.T) { testClusterCarddriftStores(t, cl, r) })
	t.Run("dead-letter", func(t *testing.T) { testClusterDeadLetter(t, cl, r) })
	t.Run("no-pin", func(t *testing.T) { testClusterNoPin(t, cl, serves) })

	if v := cl.violationsBy("CARDDRIFT"); len(v) > 0 {
		t.Errorf("carddrift needed permissions it does not have:\n%s", strings.Join(v, "\n"))
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// plannerJS connects as a planner: JetStream through the API prefix the
// PLANNERS account imports carddrift's API under.
func plannerJS(t *testing.T, cl *natsCluster) (*nats.Conn, jetstream.JetStream, *asyncErrors) {
	t.Helper()
	nc, errs := cl.connect(t, rolePlanner)
	js, err := jetstream.NewWithAPIPrefix(nc, plannerAPIPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js, errs
}

// outcomes returns each serve's carddrift_events_total series.
func outcomes(serves []*serveProc) []string {
	c := http.Client{Timeout: 5 * time.Second}
	var lines []string
	for _, p := range serves {
		resp, err := c.Get("http://" + p.httpAddr + "/metrics")
		if err != nil {
			lines = append(lines, p.httpAddr+": "+err.Error())
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "carddrift_events_total{") {
				lines = append(lines, p.httpAddr+" "+line)
			}
		}
	}
	return lines
}

// logPins logs the stored pin of each task that lacks its two drifts.
func logPins(t *testing.T, r *rig, k *killWorkload, out *outbound) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := r.js.KeyValue(ctx, r.cfg.PinsBucket)
	if err != nil {
		t.Logf("pins bucket: %v", err)
		return
	}
	drift := countBy(out, events.TypeDrift)
	for _, task := range k.tasks {
		if drift[task] >= 2 {
			continue
		}
		e, err := kv.Get(ctx, store.EncodeKey(task))
		if err != nil {
			t.Logf("task %s: %d drifts, pin: %v", task, drift[task], err)
			continue
		}
		t.Logf("task %s: %d drifts, pin rev %d: %s", task, drift[task], e.Revision(), e.Value())
	}
}

// killReport is what the background killer saw.
type killReport struct {
	leader      string    // the node killed
	at          time.Time // SIGKILL
	published   int64     // lifecycle events acknowledged before it
	newLeader   string
	elected     time.Duration // SIGKILL → a new leader answers stream info
	restartedAt time.Time
	err         error
}

func testClusterLeaderKilled(t *testing.T, cl *natsCluster, r *rig, serves []*serveProc) {
	_, pjs, _ := plannerJS(t, cl)
	// Every card.* event, read by the planner through an ordered consumer.
	out := (&rig{t: t, js: pjs, cfg: r.cfg}).collect()
	// And the planner's own durable consumer of card.drift.
	var mu sync.Mutex
	verdicts := map[string]int{} // event id → deliveries
	sub, err := planner.Subscribe(context.Background(), pjs, planner.Options{Durable: "cluster-test", FromStart: true},
		func(_ context.Context, v planner.Verdict) error {
			mu.Lock()
			verdicts[v.EventID]++
			mu.Unlock()
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Stop)

	// The kill workload (kill_test.go) on a larger fleet: tasks pinned on
	// the T0 card while agents serve T+40s; a streaming request, an
	// input-required status and an undeclared artifact per task; one
	// card.pinned and two card.drift each.
	k := newKillWorkload(t, clusterAgents, clusterTasksPerAgent, "cluster-%02d-%d")
	total := 4 * len(k.tasks)

	cnc, _ := cl.connect(t, roleClient)
	cjs, err := jetstream.New(cnc)
	if err != nil {
		t.Fatal(err)
	}
	pub := &retryingPublisher{JetStream: cjs}
	emit, err := client.NewEmitter(pub, "urn:carddrift-test:cluster-client", publish.WithTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emit.Close(context.Background()) })

	leader := streamLeader(r.js, r.cfg.LifecycleStream)
	if cl.node(leader) == nil {
		t.Fatalf("lifecycle stream leader %q is not a node of the cluster", leader)
	}

	// The killer: once a third of the burst is acknowledged, SIGKILL the
	// stream leader, wait for a new one, and restart the node clusterDownFor
	// later.
	killed := make(chan killReport, 1)
	go func() {
		rep := killReport{leader: leader}
		defer func() { killed <- rep }()
		for pub.published.Load() < int64(total/3) {
			time.Sleep(time.Millisecond)
		}
		rep.published = pub.published.Load()
		rep.at = time.Now()
		if rep.err = cl.node(leader).kill(); rep.err != nil {
			return
		}
		for time.Since(rep.at) < 30*time.Second {
			if l := streamLeader(r.js, r.cfg.LifecycleStream); l != "" && l != leader {
				rep.newLeader, rep.elected = l, time.Since(rep.at)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(clusterDownFor) // the cluster works on without it
		rep.restartedAt = time.Now()
		rep.err = cl.start(cl.node(leader))
	}()

	t.Cleanup(func() {
		if t.Failed() {
			r.dumpLifecycle(t)
			t.Logf("card.pinned %d, card.drift by worker %v", len(out.all(events.TypePinned)), sources(out, events.TypeDrift))
			// What the stream holds, against what the collector saw: a
			// drift missing from both is lost, one missing from the
			// collector only is the collector's.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if s, err := r.js.Stream(ctx, r.cfg.EventsStream); err != nil {
				t.Logf("events stream: %v", err)
			} else if info, err := s.Info(ctx, jetstream.WithSubjectFilter(events.TypeDrift+".>")); err != nil {
				t.Logf("events stream info: %v", err)
			} else {
				n := uint64(0)
				for _, c := range info.State.Subjects {
					n += c
				}
				t.Logf("card.drift stored in %s: %d (%d messages in all)", r.cfg.EventsStream, n, info.State.Msgs)
			}
			t.Logf("outcomes:\n%s", strings.Join(outcomes(serves), "\n"))
			logPins(t, r, k, out)
		}
	})
	burstStart := time.Now()
	k.publish(t, emit) // every task's submission, then every transition; retried until acknowledged
	burst := time.Since(burstStart)
	var rep killReport
	select {
	case rep = <-killed:
	case <-time.After(60 * time.Second):
		t.Fatal("the killer did not report within 60s")
	}
	if rep.err != nil {
		t.Fatalf("kill and restart %s: %v", leader, rep.err)
	}
	if rep.newLeader == "" {
		t.Fatalf("no new leader of %s within 30s of killing %s", r.cfg.LifecycleStream, leader)
	}
	if rep.published >= int64(total) {
		t.Fatalf("%s was killed after the burst (%d of %d events published): nothing to test", leader, rep.published, total)
	}

	eventually(t, 60*time.Second, "every task's pin and two drifts", func() bool { return k.done(out) })
	allVerdicts := time.Since(rep.at)
	eventually(t, 60*time.Second, leader+" current again on the lifecycle and card streams", func() bool {
		return replicaCurrent(r.js, r.cfg.LifecycleStream, leader) && replicaCurrent(r.js, r.cfg.EventsStream, leader)
	})
	recovered := time.Since(rep.restartedAt)
	cl.waitHealthy(cl.node(leader), 30*time.Second)

	// No lifecycle event lost, none stored twice (the retries' duplicates
	// were dropped by Nats-Msg-Id); no card.drift duplicated, every task's
	// pin and drifts; lifecycle consumers fully acknowledged; no dead letter.
	k.check(t, r, out)
	if info := streamInfo(r.js, r.cfg.LifecycleStream); info == nil || info.State.Msgs != uint64(total) {
		t.Errorf("lifecycle stream: %v, want %d messages (each event once)", info, total)
	}
	for p := range r.cfg.Partitions {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cons, err := r.js.Consumer(ctx, r.cfg.LifecycleStream, r.cfg.ConsumerNameOf(p))
		if err == nil {
			var info *jetstream.ConsumerInfo
			if info, err = cons.Info(ctx); err == nil && (info.NumAckPending != 0 || info.NumPending != 0) {
				err = fmt.Errorf("NumAckPending %d, NumPending %d", info.NumAckPending, info.NumPending)
			}
		}
		cancel()
		if err != nil {
			t.Errorf("consumer %s: %v", r.cfg.ConsumerNameOf(p), err)
		}
	}

	// The planner's durable consumer: every card.drift, all acknowledged.
	drifts := len(out.all(events.TypeDrift))
	eventually(t, 20*time.Second, "the planner's durable consumer to see every card.drift", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(verdicts) == drifts
	})
	eventually(t, 10*time.Second, "the planner's durable consumer to be fully acknowledged", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		cons, err := pjs.Consumer(ctx, r.cfg.EventsStream, "cluster-test")
		if err != nil {
			return false
		}
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})

	// The verdicts' own timestamps: the first card.* event published after
	// the kill, and the longest silence between two.
	var times []time.Time
	for _, ev := range out.all("") {
		times = append(times, ev.Time)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	var firstAfter, silence time.Duration
	for i, tm := range times {
		if firstAfter == 0 && tm.After(rep.at) {
			firstAfter = tm.Sub(rep.at)
		}
		if i > 0 {
			silence = max(silence, tm.Sub(times[i-1]))
		}
	}

	t.Logf("burst: %d lifecycle events for %d tasks on %d agents, published in %v (%d retried attempts; longest wait for one ack %v)",
		total, len(k.tasks), clusterAgents, burst.Round(time.Millisecond), pub.retries.Load(), pub.longestStall().Round(time.Millisecond))
	t.Logf("kill: %s, leader of %s, SIGKILLed %v into the burst after %d of %d events; new leader %s answered %v after the kill",
		leader, r.cfg.LifecycleStream, rep.at.Sub(burstStart).Round(time.Millisecond), rep.published, total, rep.newLeader, rep.elected.Round(time.Millisecond))
	t.Logf("recovery: first card.* event %v after the kill (longest silence between two: %v); %s restarted %v after the kill, current on both streams %v after its restart; every verdict %v after the kill",
		firstAfter.Round(time.Millisecond), silence.Round(time.Millisecond), leader, rep.restartedAt.Sub(rep.at).Round(time.Millisecond),
		recovered.Round(time.Millisecond), allVerdicts.Round(time.Millisecond))
	t.Logf("outcome: %d card.pinned, %d card.drift (by worker %v), 0 duplicated, 0 dead letters; the planner's durable saw %d distinct card.drift",
		len(out.all(events.TypePinned)), drifts, sources(out, events.TypeDrift), len(verdicts))
}

func testClusterPermissions(t *testing.T, cl *natsCluster, r *rig) {
	cnc, cerrs := cl.connect(t, roleClient)
	pnc, pjs, perrs := plannerJS(t, cl)
	flush := func(nc *nats.Conn) {
		t.Helper()
		if err := nc.FlushTimeout(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}

	// A client publishes lifecycle events (the burst did) and nothing else:
	// not a verdict, and it cannot read verdicts either.
	must(t, cnc.Publish("card.drift.forged.perm-1", []byte(`{}`)))
	flush(cnc)
	if err := cerrs.waitViolation(t, `Publish to "card.drift.forged.perm-1"`); err != nil {
		t.Logf("client publishing card.drift: %v", err)
	}
	if _, err := cnc.SubscribeSync("card.>"); err != nil {
		t.Fatal(err)
	}
	flush(cnc)
	cerrs.waitViolation(t, `Subscription to "card.>"`)

	// A planner reads verdicts and publishes nothing: not a lifecycle event,
	// not a verdict.
	must(t, pnc.Publish("a2a.task.submitted.perm-2", []byte(`{}`)))
	must(t, pnc.Publish("card.drift.forged.perm-3", []byte(`{}`)))
	flush(pnc)
	if err := perrs.waitViolation(t, `Publish to "a2a.task.submitted.perm-2"`); err != nil {
		t.Logf("planner publishing a2a.task.submitted: %v", err)
	}
	perrs.waitViolation(t, `Publish to "card.drift.forged.perm-3"`)

	// Nor may a planner consume the lifecycle stream or read carddrift's
	// buckets, even through the API prefix it has.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if _, err := pjs.CreateOrUpdateConsumer(ctx, r.cfg.LifecycleStream, jetstream.ConsumerConfig{Durable: "steal"}); err == nil {
		t.Error("a planner created a consumer on the lifecycle stream")
	}
	cancel()
	// (The server names the subject after the account's mapping of the
	// prefix: $JS.API.…)
	perrs.waitViolation(t, `.CONSUMER.CREATE.`+r.cfg.LifecycleStream+`.steal"`)
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	if _, err := pjs.KeyValue(ctx, r.cfg.PinsBucket); err == nil {
		t.Error("a planner bound the pins bucket")
	}
	cancel()
	perrs.waitViolation(t, `.STREAM.INFO.KV_`+r.cfg.PinsBucket+`"`)
	// Nor reach carddrift's JetStream under the prefix its own account's
	// JetStream sources the card stream through.
	must(t, pnc.Publish("JS.carddrift-source.API.CONSUMER.CREATE."+r.cfg.EventsStream+".steal", []byte(`{}`)))
	flush(pnc)
	perrs.waitViolation(t, `"JS.carddrift-source.API.CONSUMER.CREATE.`+r.cfg.EventsStream+`.steal"`)

	// A reply subject cannot smuggle a message onto the card stream: the
	// lifecycle stream's ack to a client, and a JetStream API response to a
	// planner, go back to the account that asked, never into carddrift's.
	own, err := pnc.SubscribeSync("card.drift.smuggled.>")
	if err != nil {
		t.Fatal(err)
	}
	flush(pnc)
	must(t, pnc.PublishRequest(plannerAPIPrefix+".STREAM.INFO."+r.cfg.EventsStream, "card.drift.smuggled.planner", nil))
	// The stream refuses this publish (wrong expected last sequence) and
	// sends its error ack to the reply subject; nothing is stored.
	must(t, cnc.PublishMsg(&nats.Msg{Subject: "a2a.task.status.perm-4", Reply: "card.drift.smuggled.client",
		Header: nats.Header{"Nats-Expected-Last-Sequence": []string{"1"}}, Data: []byte(`{}`)}))
	flush(cnc)
	flush(pnc)
	if m, err := own.NextMsg(5 * time.Second); err != nil {
		t.Errorf("the planner's API response did not come back to its own account: %v", err)
	} else if !bytes.Contains(m.Data, []byte("stream_info_response")) {
		t.Errorf("planner's reply subject got %q, want a stream info response", m.Data)
	}
	time.Sleep(500 * time.Millisecond)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	s, err := r.js.Stream(ctx, r.cfg.EventsStream)
	if err == nil {
		var info *jetstream.StreamInfo
		if info, err = s.Info(ctx, jetstream.WithSubjectFilter("card.*.smuggled.>")); err == nil && len(info.State.Subjects) > 0 {
			t.Errorf("messages smuggled onto %s: %v", r.cfg.EventsStream, info.State.Subjects)
		}
	}
	cancel()
	if err != nil {
		t.Fatal(err)
	}

	// No entry without the deployment's certificates: plain TCP, TLS without
	// a client certificate, a carddrift certificate from another CA.
	n := cl.nodes[0]
	if err := plainConnect(n.client); err != nil {
		t.Error(err)
	}
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(cl.certs, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	foreign := foreignCert(t)
	for _, c := range []struct {
		name string
		url  string
		opts []nats.Option
	}{
		{"no client certificate", fmt.Sprintf("tls://127.0.0.1:%d", n.client), []nats.Option{nats.Secure(&tls.Config{RootCAs: pool})}},
		{"CN=carddrift from another CA", fmt.Sprintf("tls://127.0.0.1:%d", n.client), []nats.Option{nats.Secure(&tls.Config{RootCAs: pool,
			// sent although the server does not list its issuer
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &foreign, nil }})}},
	} {
		nc, err := nats.Connect(c.url, append(c.opts, nats.Timeout(3*time.Second), nats.MaxReconnects(0))...)
		if err == nil {
			nc.Close()
			t.Errorf("%s: connected, want refused", c.name)
			continue
		}
		t.Logf("%s: refused: %v", c.name, err)
	}
}

// testClusterCarddriftStores stores a card body too large for the cards
// bucket (inline limit lowered to 64 bytes), as carddrift serve does with
// large cards, and reads it back, with carddrift's identity.
func testClusterCarddriftStores(t *testing.T, cl *natsCluster, r *rig) {
	// allCurrent waits until every replica of the two buckets is current
	// (no lag): an event, bounded generously.
	allCurrent := func(when string) {
		t.Helper()
		for _, stream := range []string{"KV_" + r.cfg.CardsBucket, "OBJ_" + r.cfg.CardsObjectBucket} {
			eventually(t, 2*time.Minute, stream+" current on every node "+when, func() bool {
				for _, n := range cl.nodes {
					if !replicaCurrent(r.js, stream, n.name) {
						return false
					}
				}
				return true
			})
		}
	}
	allCurrent("after the failover")
	// Generous bounds: a 300 kB put is a few R3 publishes, which under
	// -race on a busy machine took more than the 20 s they once shared
	// with the lookups.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kv, err := r.js.KeyValue(ctx, r.cfg.CardsBucket)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := r.js.ObjectStore(ctx, r.cfg.CardsObjectBucket)
	if err != nil {
		t.Fatal(err)
	}
	cards := store.NewKVCards(kv, obj, 64)
	body := []byte(`{"name":"large","description":"` + strings.Repeat("x", 300_000) + `"}`)
	sum := sha256.Sum256(body)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if err := cards.Put(ctx, digest, body); err != nil {
		t.Fatalf("put a %d-byte card: %v", len(body), err)
	}
	// Direct gets (KV and object metadata) are answered by any replica, so
	// a read right after the write may reach a follower that has not
	// applied it yet: wait until every replica of both streams has (no
	// lag), then read until it is there, as a later reader would.
	allCurrent("after the put")
	var got []byte
	var misses int
	var missed error
	eventually(t, time.Minute, "the large card to read back", func() bool {
		b, err := cards.Get(ctx, digest)
		if err != nil {
			misses, missed = misses+1, err
			return false
		}
		got = b
		return true
	})
	if misses > 0 {
		t.Logf("read back after %d reads that missed it (%v)", misses, missed)
	}
	if !bytes.Equal(got, body) {
		t.Errorf("read back %d bytes, want the %d stored", len(got), len(body))
	}
}

// testClusterDeadLetter has a client publish a lifecycle message that is no
// CloudEvent: a worker dead-letters it, with carddrift's permissions.
func testClusterDeadLetter(t *testing.T, cl *natsCluster, r *rig) {
	cnc, _ := cl.connect(t, roleClient)
	cjs, err := jetstream.New(cnc)
	if err != nil {
		t.Fatal(err)
	}
	before := streamInfo(r.js, r.cfg.DLQStream)
	if before == nil {
		t.Fatal("no dead-letter stream info")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = cjs.Publish(ctx, "a2a.task.status.dead-letter-probe", []byte("not a CloudEvent"))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the malformed event in the dead-letter stream", func() bool {
		info := streamInfo(r.js, r.cfg.DLQStream)
		return info != nil && info.State.Msgs > before.State.Msgs
	})
	r.drained(t, 20*time.Second)
}

// testClusterNoPin: a transition of a task never submitted is acknowledged
// as no-pin once its grace is over, after the worker asked the lifecycle
// stream for the task's submission, with the shipped permissions (TestCluster
// fails on any violation by the carddrift user).
func testClusterNoPin(t *testing.T, cl *natsCluster, serves []*serveProc) {
	cnc, _ := cl.connect(t, roleClient)
	cjs, err := jetstream.New(cnc)
	if err != nil {
		t.Fatal(err)
	}
	emit, err := client.NewEmitter(cjs, "urn:carddrift-test:cluster-client")
	if err != nil {
		t.Fatal(err)
	}
	must(t, emit.Request(context.Background(), events.Request{TaskID: "never-submitted", AgentURL: "http://127.0.0.1:9", Method: "tasks/sendSubscribe", Attempt: 1}))
	must(t, emit.Close(context.Background()))
	start := time.Now()
	eventually(t, 2*time.Minute, "the request acknowledged as no-pin", func() bool {
		return strings.Contains(strings.Join(outcomes(serves), "\n"), `outcome="no-pin",type="a2a.task.request"`)
	})
	t.Logf("no-pin %v after the request", time.Since(start).Round(time.Second))
}

// startServeEarly starts `carddrift serve` as startServe does, against a
// cluster that may still be forming, and returns as soon as its HTTP
// endpoints are up (before it consumes: waitConsuming). Its /readyz
// answers 503 meanwhile.
func startServeEarly(t *testing.T, bin, natsURL, name string) *serveProc {
	t.Helper()
	return spawnServe(t, bin, name, "metrics and health on", nil, append(rigServeFlags(natsURL), "--log-level", "info")...)
}

// waitConsuming waits until the process's worker consumes; it fails the
// test if the process exits first (a start-up that gave up) or if it is
// still not consuming after within. It logs what /readyz said while it
// waited.
func (p *serveProc) waitConsuming(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	said := map[string]bool{}
	c := http.Client{Timeout: 2 * time.Second}
	for !strings.Contains(p.logs.String(), "consuming A2A_TASKS") {
		select {
		case <-p.exited:
			t.Fatalf("%s exited at start-up: %v\n%s", p.name, p.err, p.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not consuming after %v:\n%s", p.name, within, p.logs.String())
		}
		if resp, err := c.Get("http://" + p.httpAddr + "/readyz"); err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			resp.Body.Close()
			if line := fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b))); !said[line] {
				said[line] = true
				t.Logf("%s /readyz: %s", p.name, line)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := c.Get("http://" + p.httpAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s /readyz = %d once consuming, want 200", p.name, resp.StatusCode)
	}
}

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

// shippedPortRe finds a port of the shipped configuration (client, route,
// monitoring) left in a line, and not a test port that begins with its digits.
var shippedPortRe = regexp.MustCompile(`:(4222|6222|8222)([^0-9]|$)`)

// startCluster runs deployments/nats/nats-{1,2,3}.conf as three processes,
// rewritten for the test: loopback ports, a temporary store, the test
// certificates. Everything else (TLS settings, accounts, users, permissions)
// is the shipped configuration. It waits until every node is healthy
// (JetStream current) and stops them when the test ends; under -short the
// test is skipped, for why.
func startCluster(t *testing.T, why string) *natsCluster {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	c := startClusterNodes(t, natsServerBinary(t), makeTestCerts(t))
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
	accounts, err := os.ReadFile("../deployments/nats/accounts.conf")
	if err != nil {
		t.Fatal(err)
	}
	// A free port is free only until somebody takes it (an outgoing
	// connection of another test's process can): a node that finds its port
	// taken exits, and the cluster starts again on new ports.
	for attempt := 1; ; attempt++ {
		base := t.TempDir()
		c.nodes = nil
		for i := 1; i <= 3; i++ {
			n := &natsNode{name: fmt.Sprintf("nats-%d", i), dir: filepath.Join(base, fmt.Sprintf("nats-%d", i)),
				client: freePort(t), route: freePort(t), monitor: freePort(t)}
			n.log = filepath.Join(n.dir, "nats-server.log")
			if err := os.MkdirAll(n.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			c.nodes = append(c.nodes, n)
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
		for _, n := range c.nodes {
			if err := c.start(n); err != nil {
				t.Fatal(err)
			}
		}
		if attempt == 3 || c.bound(20*time.Second) {
			return c
		}
		t.Logf("a port was taken before nats-server bound it (attempt %d): starting again on new ports", attempt)
		for _, n := range c.nodes {
			n.stop()
		}
	}
}

// bound reports whether every node bound its listeners (false as soon as
// one logged a port in use); true after timeout, when a slow start is left
// to the health wait.
func (c *natsCluster) bound(timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		all := true
		for _, n := range c.nodes {
			b, _ := os.ReadFile(n.log)
			if bytes.Contains(b, []byte("address already in use")) {
				return false
			}
			all = all && bytes.Contains(b, []byte("Listening for route connections"))
		}
		if all {
			return true
		}
	}
	return true
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
		for _, left := range []string{"0.0.0.0", "/data/", "/etc/nats"} {
			if left == "0.0.0.0" && strings.HasPrefix(strings.TrimSpace(line), "http:") {
				continue // the monitoring host stays as shipped
			}
			if strings.Contains(line, left) {
				t.Fatalf("%s: %q is left after rewriting it for the test: %s", src, left, line)
			}
		}
		// A shipped port, not a test port that begins with its digits.
		if m := shippedPortRe.FindString(line); m != "" {
			t.Fatalf("%s: %q is left after rewriting it for the test: %s", src, m, line)
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
