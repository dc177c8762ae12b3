package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/natstest"
	"github.com/carddrift/carddrift/store/topology"
)

// steeringHeaders are the publish headers nats-server v2.15.2 acts on
// (server/stream.go, msgtrace.go: JS*, MsgTrace*), with values that would
// make a dead-letter stream refuse, drop, expire, roll up or trace the
// copy, and spellings in other cases.
var steeringHeaders = map[string]string{
	"Nats-Msg-Id":                                 "attacker-chosen",
	"Nats-Expected-Stream":                        topology.DefaultLifecycleStream,
	"Nats-Expected-Last-Sequence":                 "999999",
	"Nats-Expected-Last-Subject-Sequence":         "999999",
	"Nats-Expected-Last-Subject-Sequence-Subject": "carddrift.dlq.malformed",
	"Nats-Expected-Last-Msg-Id":                   "nope",
	"Nats-Rollup":                                 "all",
	"Nats-TTL":                                    "1s",
	"Nats-Incr":                                   "+1",
	"Nats-Batch-Id":                               "b1",
	"Nats-Batch-Sequence":                         "1",
	"Nats-Batch-Commit":                           "1",
	"Nats-Schedule":                               "@every 1s",
	"Nats-Schedule-Target":                        "carddrift.dlq.x",
	"Nats-Schedule-TTL":                           "1s",
	"Nats-Required-Api-Level":                     "999",
	"Nats-Trace-Dest":                             "attacker.trace",
	"Nats-Trace-Only":                             "true",
	"nats-expected-stream":                        "NOPE",
	"Carddrift-Dead-Letter-Reason":                "nothing-to-see",
	"Carddrift-Stream-Sequence":                   "1",
}

// startDLQ starts an embedded JetStream with carddrift's default streams
// provisioned, and returns the connection, its cfg and the dead-letter
// stream.
func startDLQ(t *testing.T) (*nats.Conn, jetstream.JetStream, store.Config, jetstream.Stream) {
	t.Helper()
	_, nc, js := natstest.StartJetStream(t)
	cfg := store.DefaultConfig()
	if err := store.Provision(context.Background(), js, cfg); err != nil {
		t.Fatal(err)
	}
	dlq, err := js.Stream(context.Background(), cfg.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js, cfg, dlq
}

// TestDeadLetterCopyIsStored publishes the dead-letter copy of events
// carrying each steering header, and all of them at once, to a real
// dead-letter stream: every copy is stored, with the publisher's steering
// headers renamed and its other headers kept, and carddrift's own.
func TestDeadLetterCopyIsStored(t *testing.T) {
	ctx := context.Background()
	nc, js, cfg, dlq := startDLQ(t)
	type tc struct {
		name   string
		header nats.Header
	}
	all := nats.Header{"traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	var cases []tc
	for k, v := range steeringHeaders {
		cases = append(cases, tc{k, nats.Header{k: {v}, "traceparent": all["traceparent"]}})
		all[k] = []string{v}
	}
	cases = append(cases, tc{"all", all})

	// The copy as it was made before (headers copied as they are) is
	// refused: the test exercises a stream that means it.
	raw := nats.NewMsg("carddrift.dlq.malformed")
	raw.Header.Set("Nats-Expected-Stream", topology.DefaultLifecycleStream)
	if _, err := js.PublishMsg(ctx, raw); err == nil {
		t.Fatalf("the dead-letter stream stored a copy that expects stream %s", topology.DefaultLifecycleStream)
	}

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := original{subject: "a2a.task.status.x.1", header: c.header, data: []byte("not a cloudevent"), stream: cfg.LifecycleStream, seq: uint64(100 + i)}
			m := deadLetterMsg("carddrift.dlq.malformed", o, ReasonMalformed, errors.New("boom"), nc.MaxPayload())
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			ack, err := js.PublishMsg(pctx, m)
			if err != nil {
				t.Fatalf("dead-letter publish = %v, want stored", err)
			}
			got, err := dlq.GetMsg(ctx, ack.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			for k, vs := range c.header {
				want := k
				if steers(k) {
					want = PublisherHeaderPrefix + k
					if got.Header.Get(k) == vs[0] {
						t.Errorf("copy carries the publisher's %s: %s", k, vs[0])
					}
				}
				if got.Header.Get(want) != vs[0] {
					t.Errorf("copy's %s = %q, want the publisher's %q", want, got.Header.Get(want), vs[0])
				}
			}
			if got.Header.Get(HeaderDeadLetterReason) != string(ReasonMalformed) || got.Header.Get(HeaderOriginalSubject) != o.subject {
				t.Errorf("copy's own headers = %v", got.Header)
			}
			if string(got.Data) != string(o.data) {
				t.Errorf("copy's data = %q", got.Data)
			}
		})
	}
}

// TestDeadLetterCopyFitsMaxPayload: an event of the largest size the
// server takes still has a dead-letter copy the server takes: without the
// publisher's headers when that is enough, else with its data cut and its
// original size recorded.
func TestDeadLetterCopyFitsMaxPayload(t *testing.T) {
	ctx := context.Background()
	nc, js, cfg, dlq := startDLQ(t)
	maxPayload := nc.MaxPayload()
	steer := nats.Header{"Nats-Expected-Stream": {cfg.LifecycleStream}}
	padded := nats.Header{"X-Padding": {strings.Repeat("p", 8192)}, "Nats-Expected-Stream": {cfg.LifecycleStream}}
	cases := []struct {
		name      string
		header    nats.Header
		truncated bool
	}{
		{"headers dropped", padded, false},
		{"data cut", steer, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(strings.Repeat("d", int(maxPayload-headerSize(c.header))))
			m := deadLetterMsg("carddrift.dlq.malformed", original{subject: "a2a.task.status.x", header: c.header, data: data, stream: cfg.LifecycleStream, seq: uint64(i + 1)},
				ReasonMalformed, errors.New(strings.Repeat("e", 4096)), maxPayload)
			if size := headerSize(m.Header) + int64(len(m.Data)); size > maxPayload {
				t.Fatalf("copy is %d bytes, more than the server's %d", size, maxPayload)
			}
			ack, err := js.PublishMsg(ctx, m)
			if err != nil {
				t.Fatalf("dead-letter publish = %v", err)
			}
			got, err := dlq.GetMsg(ctx, ack.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			if got.Header.Get(PublisherHeaderPrefix+"Nats-Expected-Stream") != "" || got.Header.Get("X-Padding") != "" {
				t.Errorf("copy kept the publisher's headers: %d bytes of them", headerSize(got.Header))
			}
			if len(got.Header.Get(HeaderError)) > maxErrorHeader {
				t.Errorf("%s is %d bytes", HeaderError, len(got.Header.Get(HeaderError)))
			}
			cut := got.Header.Get(HeaderDataTruncated)
			switch {
			case !c.truncated && (cut != "" || string(got.Data) != string(data)):
				t.Errorf("copy: %d of %d bytes of data, %s %q; want all of it", len(got.Data), len(data), HeaderDataTruncated, cut)
			case c.truncated && (cut != strconv.Itoa(len(data)) || len(got.Data) == 0 || len(got.Data) >= len(data) || !strings.HasPrefix(string(data), string(got.Data))):
				t.Errorf("copy: %d of %d bytes of data, %s %q; want a prefix and the size", len(got.Data), len(data), HeaderDataTruncated, cut)
			}
		})
	}
}

// TestDeadLetterReasons audits the vocabulary: unique, each a literal NATS
// subject token (the last of carddrift.dlq.<reason>).
func TestDeadLetterReasons(t *testing.T) {
	seen := map[DeadLetterReason]bool{}
	for _, r := range DeadLetterReasons() {
		if seen[r] {
			t.Errorf("reason %q listed twice", r)
		}
		seen[r] = true
		if r == "" || strings.ContainsAny(string(r), ".*> \t") || events.Token(string(r)) != string(r) {
			t.Errorf("reason %q is not a plain subject token", r)
		}
	}
	if !seen[ReasonSubjectMismatch] {
		t.Errorf("%s missing from DeadLetterReasons", ReasonSubjectMismatch)
	}

	// The public contract's table (schemas/README.md) lists the same
	// reasons, in order.
	doc, err := os.ReadFile(filepath.Join("..", "..", "schemas", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "### Dead-letter reasons\n")
	if !ok {
		t.Fatal("schemas/README.md has no section \"### Dead-letter reasons\"")
	}
	var got, want []string
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if id, ok := strings.CutPrefix(line, "| `"); ok {
			id, _, _ = strings.Cut(id, "`")
			got = append(got, id)
		}
	}
	for _, r := range DeadLetterReasons() {
		want = append(want, string(r))
	}
	if !slices.Equal(got, want) {
		t.Errorf("schemas/README.md's dead-letter reasons = %v\nDeadLetterReasons() = %v", got, want)
	}
}

// TestCheckSubjectShapes: the shapes of a stored lifecycle subject the
// worker accepts, with and without partitions and under another prefix.
func TestCheckSubjectShapes(t *testing.T) {
	ev := events.Event{Type: events.TypeStatus, Data: events.Status{TaskID: "t.1", AgentURL: "https://a.example", State: "working"}}
	tok := events.Token("t.1")
	pinned := events.Event{Type: events.TypePinned, Data: events.Pinned{TaskID: "t.1", AgentURL: "https://a.example"}}
	cases := []struct {
		name       string
		subjects   string
		partitions int
		ev         events.Event
		subject    string
		ok         bool
	}{
		{"unpartitioned", "a2a.task.>", 0, ev, "a2a.task.status." + tok, true},
		{"partitioned", "a2a.task.>", 4, ev, "a2a.task.status." + tok + ".3", true},
		{"another prefix", "acme.tasks.>", 2, ev, "acme.tasks.status." + tok + ".1", true},
		{"outbound type: left to the handler", "a2a.task.>", 4, pinned, "a2a.task.pinned.decoy.0", true},
		{"another task", "a2a.task.>", 4, ev, "a2a.task.status.decoy.0", false},
		{"another kind", "a2a.task.>", 4, ev, "a2a.task.error." + tok + ".0", false},
		{"raw id", "a2a.task.>", 0, ev, "a2a.task.status.t.1", false},
		{"no partition token", "a2a.task.>", 4, ev, "a2a.task.status." + tok, false},
		{"the last partition there can be", "a2a.task.>", topology.MaxPartitions, ev, "a2a.task.status." + tok + "." + strconv.Itoa(topology.MaxPartitions-1), true},
		{"beyond the partitions there can be", "a2a.task.>", topology.MaxPartitions, ev, "a2a.task.status." + tok + "." + strconv.Itoa(topology.MaxPartitions), false},
		{"a non-canonical partition", "a2a.task.>", 4, ev, "a2a.task.status." + tok + ".01", false},
		{"a token where the partition goes", "a2a.task.>", 4, ev, "a2a.task.status." + tok + ".x", false},
		{"extra tokens", "a2a.task.>", 4, ev, "a2a.task.status." + tok + ".0.0", false},
		{"outside the prefix", "acme.tasks.>", 0, ev, "a2a.task.status." + tok, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := store.DefaultConfig()
			cfg.LifecycleSubjects, cfg.Partitions = c.subjects, c.partitions
			w := &Worker{cfg: cfg}
			err := w.checkSubject(c.subject, c.ev)
			if c.ok && err != nil {
				t.Fatalf("checkSubject(%q) = %v, want nil", c.subject, err)
			}
			if !c.ok && !errors.Is(err, events.ErrSubjectMismatch) {
				t.Fatalf("checkSubject(%q) = %v, want ErrSubjectMismatch", c.subject, err)
			}
		})
	}
}

// FuzzCheckSubjectShapes feeds stored subjects and task ids to
// checkSubject: it accepts exactly <prefix>.status.<Token(id)>, followed
// by a partition number when the stream is partitioned.
func FuzzCheckSubjectShapes(f *testing.F) {
	f.Add("a2a.task.status.t-1", "t-1", uint8(0))
	f.Add("a2a.task.status.t-1.3", "t-1", uint8(4))
	f.Add("a2a.task.status.t=2E1.0", "t.1", uint8(4))
	f.Add("a2a.task.status.t.1", "t.1", uint8(0))
	f.Add("a2a.task.error.victim.2", "victim", uint8(4))
	f.Add("a2a.task.status.decoy.0.0", "victim", uint8(4))
	f.Fuzz(func(t *testing.T, subject, id string, partitions uint8) {
		cfg := store.DefaultConfig()
		cfg.Partitions = int(partitions % 8)
		w := &Worker{cfg: cfg}
		ev := events.Event{Type: events.TypeStatus, Data: events.Status{TaskID: id, AgentURL: "https://a.example", State: "working"}}
		err := w.checkSubject(subject, ev)
		if err != nil && !errors.Is(err, events.ErrSubjectMismatch) {
			t.Fatalf("checkSubject(%q) = %v", subject, err)
		}
		own := "a2a.task.status." + events.Token(id)
		rest, cut := strings.CutPrefix(subject, own)
		want := cut && (cfg.Partitions == 0 && rest == "" || cfg.Partitions > 0 && strings.HasPrefix(rest, ".") && partitionToken(rest[1:]))
		if (err == nil) != want {
			t.Fatalf("checkSubject(%q) for task %q, %d partitions = %v, want accepted %v", subject, id, cfg.Partitions, err, want)
		}
	})
}

// partitionToken is the fuzz oracle's partition token: a decimal number
// below topology.MaxPartitions.
func partitionToken(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n < topology.MaxPartitions && strconv.Itoa(n) == s
}
