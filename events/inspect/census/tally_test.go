package census_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/census"
	"github.com/carddrift/carddrift/events/publish"
	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
	"github.com/carddrift/carddrift/store/natstest"
)

// fresh is a Source whose Tally is new, following the pins, the leases and
// the card stream: its census reads everything, as carddrift fleet's does,
// and is the oracle of a Tally kept across censuses.
func fresh(js jetstream.JetStream, cfg store.Config, st *store.Stores[task.Pin], cards store.Cards) census.Source {
	return census.Source{Cards: cards, Tally: census.NewTally(js, st.Pins.KV(), census.TallyOptions{Leases: st.Leases.KV(), Events: cfg.EventsStream})}
}

// digestA and digestB are two card digests; TestTallyReadsChanges stores
// bodies under them, the other tests pin them without bodies.
var (
	digestA = "sha256:" + strings.Repeat("a", 64)
	digestB = "sha256:" + strings.Repeat("b", 64)
)

// countingCards counts the bodies a census reads.
type countingCards struct {
	store.Cards
	read atomic.Int64
}

func (c *countingCards) Get(ctx context.Context, digest string) ([]byte, error) {
	c.read.Add(1)
	return c.Cards.Get(ctx, digest)
}

func pinOn(id string, agent int, digest string) task.Pin {
	return task.Pin{TaskID: id, AgentURL: fmt.Sprintf("https://agent-%02d.example", agent), Digest: digest}
}

// TestTallyReadsChanges: with 2,000 pins on 20 agents, a fresh Tally reads
// all 2,000 pins at every census; a kept one reads them once, then only
// what changed — nothing when nothing did, one pin for one re-pin to
// another agent (its count moves) or one delete — and the census it gives
// is the fresh one's, byte for byte.
func TestTallyReadsChanges(t *testing.T) {
	js, cfg, st := openStores(t)
	ctx := context.Background()
	var err error
	const pins, agents = 2000, 20
	for i := range pins {
		digest := digestA
		if i%3 == 0 {
			digest = digestB
		}
		_, err := st.Pins.Create(ctx, pinOn(fmt.Sprintf("t%04d", i), i%agents, digest))
		must(t, err)
	}
	must(t, st.Cards.Put(ctx, digestA, []byte(`{"name":"A","version":"1.0.0","skills":[]}`)))
	must(t, st.Cards.Put(ctx, digestB, []byte(`{"name":"A","version":"2.0.0","skills":[]}`)))
	cards := &countingCards{Cards: st.Cards}
	incr := fresh(js, cfg, st, cards)
	tally := incr.Tally
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	opts := census.Options{Now: func() time.Time { return now }}

	// take takes a fresh census and the kept Tally's, checks they agree,
	// and returns the pins each read, and the agent's count.
	take := func(step string, agent string) (scanRead, tallyRead int64, count int) {
		t.Helper()
		scan := fresh(js, cfg, st, st.Cards)
		fs, err := census.Take(ctx, scan, opts)
		must(t, err)
		fi, err := census.Take(ctx, incr, opts)
		must(t, err)
		js1, _ := json.Marshal(fs)
		js2, _ := json.Marshal(fi)
		if !bytes.Equal(js1, js2) {
			t.Errorf("%s: the Tally's census differs from a fresh one's:\n%s\n%s", step, js2, js1)
		}
		for _, a := range fi.Agents {
			if a.AgentURL == agent {
				count = a.Pins()
			}
		}
		return int64(scan.Tally.Stats().LastRead), int64(tally.Stats().LastRead), count
	}
	agent0, agent1 := "https://agent-00.example", "https://agent-01.example"

	s, n, c := take("initial", agent0)
	t.Logf("initial census: a fresh Tally read %d pins, Tally %d", s, n)
	if s != pins || n != pins || c != pins/agents {
		t.Errorf("initial census: a fresh Tally read %d, Tally %d, want %d each; agent 0 has %d pins, want %d", s, n, pins, c, pins/agents)
	}
	s, n, _ = take("unchanged", agent0)
	t.Logf("census with no change: a fresh Tally read %d pins, Tally %d", s, n)
	if s != pins || n != 0 {
		t.Errorf("census with no change: a fresh Tally read %d (want %d), Tally %d (want 0)", s, pins, n)
	}

	// Re-pin t0000 (agent 0) on agent 1.
	p, rev, err := st.Pins.Get(ctx, "t0000")
	must(t, err)
	p.AgentURL = agent1
	_, err = st.Pins.Update(ctx, p, rev)
	must(t, err)
	s, n, c = take("re-pin", agent0)
	_, _, c1 := take("re-pin (again)", agent1)
	t.Logf("census after one re-pin: a fresh Tally read %d pins, Tally %d", s, n)
	if s != pins || n != 1 || c != pins/agents-1 || c1 != pins/agents+1 {
		t.Errorf("re-pin: a fresh Tally read %d, Tally %d (want 1); agent 0 has %d, agent 1 %d", s, n, c, c1)
	}

	must(t, st.Pins.Delete(ctx, "t0001"))
	s, n, c = take("delete", agent1)
	if s != pins || n != 1 || c != pins/agents { // the fresh read includes the delete's marker
		t.Errorf("delete: a fresh Tally read %d (want %d), Tally %d (want 1); agent 1 has %d, want %d", s, pins, n, c, pins/agents)
	}
	// The bodies of the two pinned cards were read by the first census
	// only: the versions are memoized.
	if n := cards.read.Load(); n != 2 {
		t.Errorf("the censuses with a Tally read %d card bodies, want 2 (once each)", n)
	}
	if st := tally.Stats(); st.Loads != 1 || st.Pins != pins-1 || st.Groups != 2*agents {
		t.Errorf("stats = %+v", st)
	}
}

// pinsBucket makes a pins bucket of cfg on a server of its own.
func pinsBucket(t testing.TB, cfg jetstream.KeyValueConfig) (jetstream.JetStream, jetstream.KeyValue, *store.KVPins[task.Pin]) {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	kv, err := js.CreateKeyValue(context.Background(), cfg)
	must(t, err)
	return js, kv, store.NewKVPins[task.Pin](kv)
}

// TestTallyDroppedByLimit: a bucket that drops its oldest pins for a limit
// (here MaxMsgs; a byte limit drops the same way) writes no marker, yet the
// Tally uncounts them.
func TestTallyDroppedByLimit(t *testing.T) {
	ctx := context.Background()
	js, kv, pins := pinsBucket(t, jetstream.KeyValueConfig{Bucket: "pins-limited", History: 1})
	// Limit the stream behind the bucket to 10 messages, oldest dropped.
	s, err := js.Stream(ctx, "KV_pins-limited")
	must(t, err)
	sc := s.CachedInfo().Config
	sc.MaxMsgs, sc.Discard = 10, jetstream.DiscardOld
	_, err = js.UpdateStream(ctx, sc)
	must(t, err)
	put := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := pins.Create(ctx, pinOn(fmt.Sprintf("t%02d", i), i%2, digestA))
			must(t, err)
		}
	}
	tally := census.NewTally(js, kv, census.TallyOptions{})
	put(0, 8)
	must(t, tally.Refresh(ctx))
	if st := tally.Stats(); st.Pins != 8 {
		t.Fatalf("stats = %+v, want 8 pins", st)
	}
	put(8, 15) // 15 written, the 5 oldest dropped
	must(t, tally.Refresh(ctx))
	st := tally.Stats()
	n := 0
	must(t, pins.Scan(ctx, func(task.Pin, uint64) error { n++; return nil }))
	if st.Pins != n || n != 10 || st.Dropped != 5 || st.Loads != 1 {
		t.Errorf("stats = %+v; the bucket holds %d pins", st, n)
	}
}

// TestTallyExpiry: a pin the bucket's TTL expires is uncounted from the
// expiry's marker.
func TestTallyExpiry(t *testing.T) {
	ctx := context.Background()
	js, kv, pins := pinsBucket(t, jetstream.KeyValueConfig{Bucket: "pins-ttl", History: 1, TTL: time.Second, LimitMarkerTTL: time.Minute})
	tally := census.NewTally(js, kv, census.TallyOptions{})
	_, err := pins.Create(ctx, pinOn("t1", 0, digestA))
	must(t, err)
	must(t, tally.Refresh(ctx))
	if st := tally.Stats(); st.Pins != 1 {
		t.Fatalf("stats = %+v, want 1 pin", st)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		must(t, tally.Refresh(ctx))
		if tally.Stats().Pins == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired pin is still counted: %+v", tally.Stats())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := tally.Stats(); st.Dropped != 0 || st.Loads != 1 || st.Read < 2 {
		t.Errorf("stats = %+v: the marker, not a limit, should have uncounted it", st)
	}
}

// TestTallyResync: after Resync the whole bucket is read again.
func TestTallyResync(t *testing.T) {
	ctx := context.Background()
	js, kv, pins := pinsBucket(t, jetstream.KeyValueConfig{Bucket: "pins-resync", History: 1})
	for i := range 3 {
		_, err := pins.Create(ctx, pinOn(fmt.Sprintf("t%d", i), 0, digestA))
		must(t, err)
	}
	var now atomic.Int64
	tally := census.NewTally(js, kv, census.TallyOptions{Resync: time.Minute, Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	must(t, tally.Refresh(ctx))
	must(t, tally.Refresh(ctx))
	if st := tally.Stats(); st.Loads != 1 || st.LastRead != 0 || st.Pins != 3 {
		t.Fatalf("stats = %+v", st)
	}
	now.Add(61)
	must(t, tally.Refresh(ctx))
	if st := tally.Stats(); st.Loads != 2 || st.LastRead != 3 || st.Pins != 3 {
		t.Errorf("after Resync: stats = %+v", st)
	}
}

// BenchmarkTake takes serve's census of 10,000 pins on 1,000 agents (each
// on a card of its own, with a lease), one pin re-pinned between censuses:
// with a fresh Tally each time (carddrift fleet's) and with a kept one.
// pins-read/op, leases-read/op and bodies-read/op are what one census read
// of the pins and leases buckets and of the card bodies (the live cards'
// are read at every census); tally-B/pin is the heap the Tally keeps
// per pin (all of it, groups and memo included, divided by the pins).
func BenchmarkTake(b *testing.B) {
	js, cfg, st := openStores(b)
	ctx := context.Background()
	const pins, agents = 10_000, 1000
	digest := func(agent int) string { return fmt.Sprintf("sha256:%064x", agent) }
	for i := range agents {
		must(b, st.Cards.Put(ctx, digest(i), []byte(fmt.Sprintf(`{"name":"A","version":"1.%d","skills":[]}`, i))))
	}
	for i := range pins {
		_, err := st.Pins.Create(ctx, pinOn(fmt.Sprintf("t%05d", i), i%agents, digest(i%agents)))
		must(b, err)
	}
	fetched := time.Now().UTC()
	for i := range agents {
		_, err := st.Leases.Create(ctx, store.Lease{CardURL: fmt.Sprintf("https://agent-%02d.example/.well-known/agent-card.json", i),
			Digest: digest(i), FetchedAt: fetched, ChangedAt: fetched, MaxAge: time.Minute})
		must(b, err)
	}
	for _, tc := range []struct {
		name  string
		tally bool
	}{{"fresh", false}, {"tally", true}} {
		b.Run(tc.name, func(b *testing.B) {
			cards := &countingCards{Cards: st.Cards}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			src := fresh(js, cfg, st, cards)
			_, err := census.Take(ctx, src, census.Options{}) // the initial load
			must(b, err)
			runtime.GC()
			runtime.ReadMemStats(&m1)
			heap := m1.HeapAlloc - min(m0.HeapAlloc, m1.HeapAlloc)
			var read, leaseRead uint64
			cards0 := cards.read.Load()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				p, rev, err := st.Pins.Get(ctx, fmt.Sprintf("t%05d", i%pins))
				must(b, err)
				p.AgentURL = fmt.Sprintf("https://agent-%02d.example", (i+1)%agents)
				_, err = st.Pins.Update(ctx, p, rev)
				must(b, err)
				if !tc.tally {
					src = fresh(js, cfg, st, cards) // carddrift fleet's: read everything
				}
				if _, err := census.Take(ctx, src, census.Options{}); err != nil {
					b.Fatal(err)
				}
				read, leaseRead = read+src.Tally.Stats().LastRead, leaseRead+src.Tally.Stats().LeasesLastRead
			}
			b.ReportMetric(float64(leaseRead)/float64(b.N), "leases-read/op")
			b.ReportMetric(float64(read)/float64(b.N), "pins-read/op")
			b.ReportMetric(float64(cards.read.Load()-cards0)/float64(b.N), "bodies-read/op")
			if tc.tally {
				b.ReportMetric(float64(heap)/pins, "tally-B/pin")
			}
		})
	}
}

// FuzzTally drives one pins bucket with the writes a byte string encodes —
// pins created, re-pinned to another agent or card, deleted, purged, and
// values that are not pins — refreshing a Tally between some of them: after
// every Refresh the Tally's census equals a fresh Tally's, its counts per
// agent a scan's of the bucket, and it finds undecodable values when the
// scan does.
//
// Each op is 2 bytes: op%5 (0 put, 1 re-pin, 2 delete, 3 purge, 4 garbage
// value), then the key (b%16), agent (b/16%4) and digest (b/64%2); op/5%2
// refreshes after it.
func FuzzTally(f *testing.F) {
	ctx := context.Background()
	js, kv, pins := pinsBucket(f, jetstream.KeyValueConfig{Bucket: "pins-fuzz", History: 1})
	tally := census.NewTally(js, kv, census.TallyOptions{Resync: -1})
	cards := memstore.NewCards()
	f.Add([]byte{0, 0x11, 5, 0x11, 1, 0x52, 5, 0})
	f.Add([]byte{0, 1, 0, 2, 7, 1, 3, 2, 9, 1, 4, 3, 5, 0})
	f.Add([]byte{4, 5, 5, 5, 0, 5, 6, 5, 9, 9})
	opts := census.Options{Now: func() time.Time { return time.Unix(0, 0) }}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		check := func() {
			t.Helper()
			must(t, tally.Refresh(ctx))
			scan, serr := census.Take(ctx, census.Source{Cards: cards, Tally: census.NewTally(js, kv, census.TallyOptions{})}, opts)
			incr, ierr := census.Take(ctx, census.Source{Cards: cards, Tally: tally}, opts)
			if scan == nil || incr == nil {
				t.Fatalf("census: %v, %v", serr, ierr)
			}
			a, _ := json.Marshal(scan)
			b, _ := json.Marshal(incr)
			if !bytes.Equal(a, b) || len(scan.Problems) != len(incr.Problems) {
				t.Fatalf("Tally's census %s (problems %q), a fresh one's %s (problems %q)", b, incr.Problems, a, scan.Problems)
			}
			want, got := map[string]int{}, map[string]int{}
			err := pins.Scan(ctx, func(p task.Pin, _ uint64) error { want[p.AgentURL]++; return nil })
			for _, ag := range incr.Agents {
				got[ag.AgentURL] = ag.Pins()
			}
			if !reflect.DeepEqual(got, want) || errors.Is(err, store.ErrCorrupt) != (len(incr.Problems) > 0) {
				t.Fatalf("Tally's pins per agent %v (problems %q), the bucket's %v (%v)", got, incr.Problems, want, err)
			}
		}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			id := fmt.Sprintf("t%d", arg%16)
			key := store.EncodeKey(id)
			p := pinOn(id, int(arg/16%4), []string{digestA, digestB}[arg/64%2])
			var err error
			switch op % 5 {
			case 0, 1:
				if op%5 == 1 {
					p.AgentURL = fmt.Sprintf("https://agent-%02d.example", (arg/16+1)%4)
				}
				raw, _ := json.Marshal(p)
				_, err = kv.Put(ctx, key, raw)
			case 2:
				err = kv.Delete(ctx, key)
			case 3:
				err = kv.Purge(ctx, key)
			case 4:
				_, err = kv.Put(ctx, key, []byte(`{"agentUrl":`))
			}
			must(t, err)
			if op/5%2 == 1 {
				check()
			}
		}
		check()
	})
}

// TestTallyBucketRecreated: a pins bucket deleted and made again starts
// its sequences over; the Tally reads it from scratch instead of waiting
// for sequences it has already read.
func TestTallyBucketRecreated(t *testing.T) {
	_, _, js := natstest.StartJetStream(t)
	ctx := context.Background()
	kvc := jetstream.KeyValueConfig{Bucket: "pins-again", History: 1}
	kv, err := js.CreateKeyValue(ctx, kvc)
	must(t, err)
	tally := census.NewTally(js, kv, census.TallyOptions{})
	for i := range 3 {
		_, err := store.NewKVPins[task.Pin](kv).Create(ctx, pinOn(fmt.Sprintf("t%d", i), 0, digestA))
		must(t, err)
	}
	must(t, tally.Refresh(ctx))
	must(t, js.DeleteKeyValue(ctx, kvc.Bucket))
	// Deleting an account's last stream, the server removes the account's
	// streams directory as it goes, racing a create right after it: "could
	// not create storage directory … no such file or directory" (its log),
	// 500 err_code 10049 to the client (seen once in CI).
	natstest.Eventually(t, 10*time.Second, "the bucket made again", func() bool {
		kv, err = js.CreateKeyValue(ctx, kvc)
		return err == nil
	})
	// More writes than the first bucket had: its sequences overtake.
	for i := range 5 {
		_, err = store.NewKVPins[task.Pin](kv).Create(ctx, pinOn(fmt.Sprintf("u%d", i), 1, digestA))
		must(t, err)
	}
	must(t, store.NewKVPins[task.Pin](kv).Delete(ctx, "u0"))
	must(t, tally.Refresh(ctx))
	if st := tally.Stats(); st.Pins != 4 || st.Loads != 2 {
		t.Errorf("after the bucket was made again: stats = %+v, want 4 pins from a second load", st)
	}
}

// TestTallyObserved: with the card stream followed, a census reads each
// agent's last card.observed once, then only the observations published
// since, and names the agents they show as a fresh Tally does.
func TestTallyObserved(t *testing.T) {
	js, cfg, st := openStores(t)
	ctx := context.Background()
	var err error
	pub, err := publish.New(js, "urn:carddrift:test")
	must(t, err)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	observe := func(agent int, digest string) {
		t.Helper()
		url := fmt.Sprintf("https://agent-%02d.example", agent)
		_, err := pub.Publish(ctx, events.Event{Data: events.Observed{AgentURL: url, CardURL: url + "/.well-known/agent-card.json",
			Digest: digest, Status: 200, FetchedAt: at}})
		must(t, err)
		at = at.Add(time.Second)
	}
	for i := range 5 {
		observe(i, digestA)
		observe(i, digestB) // the last of each agent
	}
	incr := fresh(js, cfg, st, st.Cards)
	tally := incr.Tally
	opts := census.Options{Now: func() time.Time { return at }}
	take := func(step string, wantRead uint64) {
		t.Helper()
		want, err := census.Take(ctx, fresh(js, cfg, st, st.Cards), opts)
		must(t, err)
		got, err := census.Take(ctx, incr, opts)
		must(t, err)
		if !reflect.DeepEqual(got.Agents, want.Agents) {
			t.Errorf("%s: census with a Tally\n%+v\nwant\n%+v", step, got.Agents, want.Agents)
		}
		if n := tally.Stats().ObservedLastRead; n != wantRead {
			t.Errorf("%s: the Tally read %d observations, want %d", step, n, wantRead)
		}
	}
	take("first", 5)
	take("nothing new", 0)
	observe(2, digestA)
	observe(7, digestA)
	take("two observations", 2)
}

// openStores opens the stores on an embedded JetStream server of their own.
func openStores(tb testing.TB) (jetstream.JetStream, store.Config, *store.Stores[task.Pin]) {
	tb.Helper()
	_, _, js := natstest.StartJetStream(tb)
	cfg := store.DefaultConfig()
	st, err := store.Open[task.Pin](context.Background(), js, cfg)
	must(tb, err)
	return js, cfg, st
}
