package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
	"github.com/carddrift/carddrift/store/natstest"
	"github.com/carddrift/carddrift/store/topology"
)

// The conformance suite every implementation of the store interfaces
// passes (KVPins, KVLeases, KVCards, CachedPins and store/memstore), so
// that they behave the same; each suite runs named subtests, calling its
// factory once per subtest for an empty store that lives until the subtest
// ends. Its fixtures (testRecord, testPin, testLease, testDigest, testBody)
// serve the package's other tests.

// awkwardIDs are the awkward ids every keyed store must keep apart and
// round-trip, by kind.
func awkwardIDs() map[string]string {
	return map[string]string{
		"plain":          "task-1",
		"dots":           "a.b.c",
		"dot-edges":      ".a.",
		"double-dot":     "a..b",
		"underscore":     "a_b_c",
		"spaces":         "a b c",
		"star":           "a.*.c",
		"gt":             "a.>",
		"lone-star":      "*",
		"lone-gt":        ">",
		"slash":          "tenant/42/task",
		"equals":         "a=b",
		"dollar":         "$KV.carddrift-pins.x",
		"unicode":        "tâche-日本語-задача",
		"emoji":          "🃏✨",
		"control":        "a\tb\nc\x00d",
		"quote":          `a"b\c`,
		"url":            "https://agent.example.com/.well-known/agent-card.json?x=1&y=*",
		"base64-like":    "dGFzay0x", // base64 of "task-1": must not collide with it
		"empty":          "",
		"max-reversible": strings.Repeat("r", store.MaxReversibleID),
		"hashed":         strings.Repeat("h", store.MaxReversibleID+1),
		"very-long":      strings.Repeat("長", 20000),
	}
}

// testRecord is the pin-like record the conformance suites store: the kinds of
// field a task's pin has.
type testRecord struct {
	TaskID          string           `json:"taskId"`
	AgentURL        string           `json:"agentUrl"`
	CardURL         string           `json:"cardUrl,omitempty"`
	Digest          string           `json:"digest"`
	Fingerprint     string           `json:"fingerprint,omitempty"`
	ProtocolVersion string           `json:"protocolVersion,omitempty"`
	CardVersion     string           `json:"cardVersion,omitempty"`
	ETag            string           `json:"etag,omitempty"`
	PinnedAt        time.Time        `json:"pinnedAt"`
	Source          string           `json:"source"`
	Requirements    testRequirements `json:"requirements"`
	Reported        []string         `json:"reported,omitempty"`
}

// testRequirements are nested slices and a map, as a task's requirements are.
type testRequirements struct {
	SkillID     string              `json:"skillId,omitempty"`
	Streaming   bool                `json:"streaming,omitempty"`
	InputModes  []string            `json:"inputModes,omitempty"`
	OutputModes []string            `json:"outputModes,omitempty"`
	Security    []string            `json:"security,omitempty"`
	Scopes      map[string][]string `json:"scopes,omitempty"`
	Posture     string              `json:"posture,omitempty"`
	Idempotent  bool                `json:"idempotent,omitempty"`
}

// Key implements store.Record.
func (r testRecord) Key() string { return r.TaskID }

// Clone implements store.Record.
func (r testRecord) Clone() testRecord {
	q := &r.Requirements
	q.InputModes = slices.Clone(q.InputModes)
	q.OutputModes = slices.Clone(q.OutputModes)
	q.Security = slices.Clone(q.Security)
	if q.Scopes != nil {
		m := make(map[string][]string, len(q.Scopes))
		for k, v := range q.Scopes {
			m[k] = slices.Clone(v)
		}
		q.Scopes = m
	}
	r.Reported = slices.Clone(r.Reported)
	return r
}

// testPin returns a record for taskID with every commonly used field set; n
// makes records of the same task differ.
func testPin(taskID string, n int) testRecord {
	return testRecord{
		TaskID:          taskID,
		AgentURL:        "https://agent.example.com",
		CardURL:         "https://agent.example.com/.well-known/agent-card.json",
		Digest:          "sha256:" + strings.Repeat("ab", 32),
		Fingerprint:     "sha256:" + strings.Repeat("cd", 32),
		ProtocolVersion: "0.3.0",
		CardVersion:     "1." + string(rune('0'+n%10)),
		ETag:            `W/"v` + string(rune('0'+n%10)) + `"`,
		PinnedAt:        time.Date(2026, 1, 2, 3, 4, 5, n, time.UTC),
		Source:          "client-card",
		Requirements: testRequirements{
			SkillID:     "summarize",
			Streaming:   n%2 == 0,
			InputModes:  []string{"text/plain", "application/json"},
			OutputModes: []string{"text/plain"},
			Security:    []string{"oauth"},
			Scopes:      map[string][]string{"oauth": {"read"}},
			Posture:     "degrade",
			Idempotent:  true,
		},
	}
}

// testLease returns a lease for cardURL; n makes leases of the same URL differ.
func testLease(cardURL string, n int) store.Lease {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(n) * time.Second)
	return store.Lease{
		CardURL:       cardURL,
		Digest:        "sha256:" + strings.Repeat("ef", 32),
		ETag:          `"e` + string(rune('0'+n%10)) + `"`,
		MaxAge:        time.Duration(n) * time.Second,
		FetchedAt:     at,
		LastFullFetch: at,
	}
}

// jsonOf renders v for comparisons.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%T) error = %v", v, err)
	}
	return string(b)
}

// short abbreviates an id in failure messages.
func short(id string) string {
	if len(id) > 40 {
		return id[:40] + "…"
	}
	return id
}

// testDigest returns a well-formed digest derived from seed (not a canonical
// digest of anything: the store does not check).
func testDigest(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// testBody returns n bytes of card-like JSON, different for different seeds.
func testBody(seed string, n int) []byte {
	if n == 0 {
		return []byte{}
	}
	b := make([]byte, 0, n+64)
	b = append(b, `{"name":"`+seed+`","description":"`...)
	for i := 0; len(b) < n-2; i++ {
		b = append(b, 'a'+byte(i%26))
	}
	return append(b, `"}`...)[:n]
}

// wantBody checks that cs holds want under d; what says when, for the
// failure.
func wantBody(t *testing.T, cs store.Cards, d string, want []byte, what string) {
	t.Helper()
	got, err := cs.Get(t.Context(), d)
	if err != nil {
		t.Fatalf("Get() %s error = %v", what, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get() %s = %d bytes %.40q, want %d bytes %.40q", what, len(got), got, len(want), want)
	}
}

// cardsSuite runs the conformance suite for store.Cards. newCards returns an
// empty store for each subtest.
func cardsSuite(t *testing.T, newCards func(t *testing.T) store.Cards) {
	t.Run("sizes", func(t *testing.T) {
		cs := newCards(t)
		for _, tc := range []struct {
			name string
			raw  []byte
		}{
			{"empty", []byte{}},
			{"one-byte", []byte("{")},
			{"1KiB", testBody("k1", 1<<10)},
			{"100KiB", testBody("k100", 100<<10)},
			{"just-under-1MiB", testBody("m1", 1<<20-2048)},
			{"over-1MiB", testBody("m2", 1<<20+1)},
			{"3MiB", testBody("m3", 3<<20)},
			{"binary", []byte{0, 1, 2, 0xff, 0xfe}},
			{"looks-like-marker", append([]byte("\x00carddrift:object\n"), `{"object":"x","size":1}`...)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				d := testDigest(tc.name)
				if err := cs.Put(t.Context(), d, tc.raw); err != nil {
					t.Fatalf("Put(%d bytes) error = %v", len(tc.raw), err)
				}
				wantBody(t, cs, d, tc.raw, "of "+tc.name)
			})
		}
	})

	t.Run("idempotent-put", func(t *testing.T) {
		cs := newCards(t)
		for _, size := range []int{100, 2 << 20} {
			d := testDigest("idem" + strconv.Itoa(size))
			first := testBody("first", size)
			for i := range 3 {
				if err := cs.Put(t.Context(), d, first); err != nil {
					t.Fatalf("Put #%d (%d bytes) error = %v", i+1, size, err)
				}
			}
			// Same canonical digest, different bytes as served: the first stays.
			if err := cs.Put(t.Context(), d, testBody("second", size)); err != nil {
				t.Fatalf("Put(other bytes) error = %v", err)
			}
			wantBody(t, cs, d, first, "after re-puts (want the first body)")
		}
	})

	t.Run("concurrent-put", func(t *testing.T) {
		cs := newCards(t)
		d := testDigest("concurrent")
		raw := testBody("concurrent", 4096)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if err := cs.Put(t.Context(), d, raw); err != nil {
					t.Errorf("Put() error = %v", err)
				}
			})
		}
		wg.Wait()
		wantBody(t, cs, d, raw, "after concurrent puts")
	})

	t.Run("get-missing", func(t *testing.T) {
		cs := newCards(t)
		if _, err := cs.Get(t.Context(), testDigest("missing")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(missing) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("isolation", func(t *testing.T) {
		cs := newCards(t)
		d := testDigest("iso")
		raw := []byte(`{"name":"iso"}`)
		if err := cs.Put(t.Context(), d, raw); err != nil {
			t.Fatalf("Put() error = %v", err)
		}
		raw[2] = 'X'
		got, err := cs.Get(t.Context(), d)
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		got[3] = 'Y'
		again, err := cs.Get(t.Context(), d)
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		if want := `{"name":"iso"}`; string(again) != want {
			t.Fatalf("Get() after caller mutations = %q, want %q", again, want)
		}
	})

	t.Run("invalid-digest", func(t *testing.T) {
		cs := newCards(t)
		valid := testDigest("x")
		for _, tc := range []struct{ name, digest string }{
			{"empty", ""},
			{"no-prefix", valid[len("sha256:"):]},
			{"other-algorithm", "sha512:" + valid[len("sha256:"):]},
			{"uppercase-hex", "sha256:" + "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"},
			{"short", valid[:len(valid)-1]},
			{"long", valid + "0"},
			{"not-hex", valid[:len(valid)-1] + "g"},
			{"path", "sha256:../../../../etc/passwd"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := cs.Put(t.Context(), tc.digest, []byte("{}")); !errors.Is(err, store.ErrInvalidDigest) {
					t.Fatalf("Put(%q) error = %v, want %v", tc.digest, err, store.ErrInvalidDigest)
				}
				if _, err := cs.Get(t.Context(), tc.digest); !errors.Is(err, store.ErrInvalidDigest) {
					t.Fatalf("Get(%q) error = %v, want %v", tc.digest, err, store.ErrInvalidDigest)
				}
			})
		}
	})
}

// Contention of casRace: goroutines × attempts each.
const (
	casGoroutines = 50
	casAttempts   = 10
)

func casHolder(n int) string { return "w" + strconv.Itoa(n) }

type casWin struct {
	base, rev uint64
	holder    string
}

// casRace has casGoroutines goroutines get and compare-and-set one key
// casAttempts times each, all at once, then checks linearizability: the
// wins form one chain from start, each revision won once, and the final
// value is the last winner's.
func casRace(t *testing.T, start uint64,
	update func(n int, base uint64) (uint64, error),
	get func() (holder string, rev uint64, err error),
) {
	t.Helper()
	var (
		mu        sync.Mutex
		wins      []casWin
		conflicts int
		wg        sync.WaitGroup
		gate      = make(chan struct{})
	)
	for g := range casGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			for a := range casAttempts {
				n := g*casAttempts + a
				_, base, err := get()
				if err != nil {
					t.Errorf("get() error = %v", err)
					return
				}
				rev, err := update(n, base)
				mu.Lock()
				switch {
				case err == nil:
					wins = append(wins, casWin{base: base, rev: rev, holder: casHolder(n)})
				case errors.Is(err, store.ErrConflict):
					conflicts++
				default:
					t.Errorf("update(base %d) error = %v", base, err)
				}
				mu.Unlock()
			}
		}()
	}
	close(gate)
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(wins) == 0 {
		t.Fatalf("wins = 0, want > 0 (conflicts %d)", conflicts)
	}
	bases := map[uint64]int{}
	revs := map[uint64]int{}
	for _, w := range wins {
		bases[w.base]++
		revs[w.rev]++
	}
	for base, n := range bases {
		if n != 1 {
			t.Fatalf("winners of revision %d = %d, want 1", base, n)
		}
	}
	if len(revs) != len(wins) {
		t.Fatalf("distinct new revisions = %d, want %d (one per success)", len(revs), len(wins))
	}
	sort.Slice(wins, func(i, j int) bool { return wins[i].base < wins[j].base })
	prev := start
	for i, w := range wins {
		if w.base != prev {
			t.Fatalf("win %d based on revision %d, want %d (the previous win's)", i, w.base, prev)
		}
		prev = w.rev
	}
	holder, rev, err := get()
	if err != nil {
		t.Fatalf("final get() error = %v", err)
	}
	last := wins[len(wins)-1]
	if rev != last.rev {
		t.Fatalf("final revision = %d, want %d", rev, last.rev)
	}
	if holder != last.holder {
		t.Fatalf("final holder = %q, want %q", holder, last.holder)
	}
	if got, want := len(wins)+conflicts, casGoroutines*casAttempts; got != want {
		t.Fatalf("wins+conflicts = %d, want %d", got, want)
	}
	t.Logf("%d wins, %d conflicts", len(wins), conflicts)
}

// casStore is the compare-and-set contract store.Pins and store.Leases
// share.
type casStore[V any] interface {
	Create(ctx context.Context, v V) (uint64, error)
	Get(ctx context.Context, key string) (V, uint64, error)
	Update(ctx context.Context, v V, rev uint64) (uint64, error)
}

// casValues makes what casSuite writes: the n-th value under a key, and
// the mark of the holder that won it, for casRace.
type casValues[V any] struct {
	value  func(key string, n int) V
	mark   func(v V, holder string) V
	holder func(v V) string
}

// casSuite runs the subtests every compare-and-set store passes, writing
// under key.
func casSuite[V any](t *testing.T, newStore func(t *testing.T) casStore[V], key string, vs casValues[V]) {
	missing := key + "/never-written"
	update := func(t *testing.T, s casStore[V]) (old, cur uint64, want V) {
		t.Helper()
		old = mustCreate(t, s, vs.value(key, 1))
		want = vs.value(key, 2)
		cur, err := s.Update(t.Context(), want, old)
		if err != nil {
			t.Fatalf("Update() error = %v", err)
		}
		if cur <= old {
			t.Fatalf("Update() rev = %d, want > %d", cur, old)
		}
		return old, cur, want
	}

	t.Run("create-get", func(t *testing.T) {
		s := newStore(t)
		want := vs.value(key, 1)
		wantStored(t, s, key, want, mustCreate(t, s, want), "after Create")
	})

	t.Run("create-twice", func(t *testing.T) {
		s := newStore(t)
		first := vs.value(key, 1)
		rev := mustCreate(t, s, first)
		if _, err := s.Create(t.Context(), vs.value(key, 2)); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second Create() error = %v, want %v", err, store.ErrExists)
		}
		wantStored(t, s, key, first, rev, "(first create)")
	})

	t.Run("get-missing", func(t *testing.T) {
		if _, _, err := newStore(t).Get(t.Context(), missing); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(missing) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("update", func(t *testing.T) {
		s := newStore(t)
		_, cur, want := update(t, s)
		wantStored(t, s, key, want, cur, "after Update")
	})

	t.Run("update-stale", func(t *testing.T) {
		s := newStore(t)
		old, cur, want := update(t, s)
		for _, stale := range []uint64{old, 0, cur + 1000} {
			if _, err := s.Update(t.Context(), vs.value(key, 3), stale); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Update(rev %d, current %d) error = %v, want %v", stale, cur, err, store.ErrConflict)
			}
		}
		wantStored(t, s, key, want, cur, "after stale Updates")
	})

	t.Run("update-missing", func(t *testing.T) {
		s := newStore(t)
		for _, rev := range []uint64{0, 1, 99} {
			if _, err := s.Update(t.Context(), vs.value(missing, 1), rev); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Update(missing, rev %d) error = %v, want %v", rev, err, store.ErrNotFound)
			}
		}
		if _, _, err := s.Get(t.Context(), missing); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get() after Update(missing) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("ids", func(t *testing.T) {
		s := newStore(t)
		ids := awkwardIDs()
		names := make([]string, 0, len(ids))
		for name := range ids {
			names = append(names, name)
		}
		sort.Strings(names)
		revs := map[string]uint64{}
		for i, name := range names {
			rev, err := s.Create(t.Context(), vs.value(ids[name], i))
			if err != nil {
				t.Fatalf("Create(%s %q) error = %v", name, short(ids[name]), err)
			}
			revs[name] = rev
		}
		for i, name := range names {
			id := ids[name]
			wantStored(t, s, id, vs.value(id, i), revs[name], name)
			nrev, err := s.Update(t.Context(), vs.value(id, i+100), revs[name])
			if err != nil {
				t.Fatalf("Update(%s) error = %v", name, err)
			}
			if _, err := s.Update(t.Context(), vs.value(id, i+200), revs[name]); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Update(%s, stale) error = %v, want %v", name, err, store.ErrConflict)
			}
			wantStored(t, s, id, vs.value(id, i+100), nrev, name+" after Update")
		}
	})

	t.Run("concurrent-cas", func(t *testing.T) {
		s := newStore(t)
		rev := mustCreate(t, s, vs.value(key, 0))
		casRace(t, rev, func(n int, base uint64) (uint64, error) {
			return s.Update(t.Context(), vs.mark(vs.value(key, n), casHolder(n)), base)
		}, func() (string, uint64, error) {
			v, rev, err := s.Get(t.Context(), key)
			return vs.holder(v), rev, err
		})
	})
}

// wantStored checks that s holds want under key at revision rev.
func wantStored[V any](t *testing.T, s casStore[V], key string, want V, rev uint64, what string) {
	t.Helper()
	got, grev, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get() %s error = %v", what, err)
	}
	if grev != rev {
		t.Fatalf("Get() %s rev = %d, want %d", what, grev, rev)
	}
	if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
		t.Fatalf("Get() %s = %.200s, want %.200s", what, g, w)
	}
}

// mustCreate creates v in s and returns its positive revision.
func mustCreate[V any](t *testing.T, s casStore[V], v V) uint64 {
	t.Helper()
	rev, err := s.Create(t.Context(), v)
	if err != nil {
		t.Fatalf("Create() error = %v", err)
	}
	if rev == 0 {
		t.Fatalf("Create() rev = 0, want > 0")
	}
	return rev
}

// pinsSuite runs the conformance suite for store.Pins. newPins returns an empty
// store for each subtest.
func pinsSuite(t *testing.T, newPins func(t *testing.T) store.Pins[testRecord]) {
	t.Run("scan", func(t *testing.T) {
		ps := newPins(t)
		scanSuite(t, ps, func(i int) testRecord { return testPin("scan-"+strconv.Itoa(i), i) }, testRecord.Key, func(id string) {
			if err := ps.Delete(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		})
	})

	casSuite(t, func(t *testing.T) casStore[testRecord] { return newPins(t) }, "t1", casValues[testRecord]{
		value:  testPin,
		mark:   func(p testRecord, holder string) testRecord { p.ETag = holder; return p },
		holder: func(p testRecord) string { return p.ETag },
	})

	t.Run("delete", func(t *testing.T) {
		ps := newPins(t)
		rev := mustCreate(t, ps, testPin("t1", 1))
		if err := ps.Delete(t.Context(), "t1"); err != nil {
			t.Fatalf("Delete() error = %v", err)
		}
		if _, _, err := ps.Get(t.Context(), "t1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get() after Delete error = %v, want %v", err, store.ErrNotFound)
		}
		if _, err := ps.Update(t.Context(), testPin("t1", 2), rev); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Update() after Delete error = %v, want %v", err, store.ErrNotFound)
		}
		if err := ps.Delete(t.Context(), "t1"); err != nil {
			t.Fatalf("Delete() twice error = %v, want nil", err)
		}
		if err := ps.Delete(t.Context(), "never-existed"); err != nil {
			t.Fatalf("Delete(missing) error = %v, want nil", err)
		}
		want := testPin("t1", 3)
		nrev, err := ps.Create(t.Context(), want)
		if err != nil {
			t.Fatalf("Create() after Delete error = %v", err)
		}
		if nrev <= rev {
			t.Fatalf("Create() after Delete rev = %d, want > %d", nrev, rev)
		}
		wantStored(t, ps, "t1", want, nrev, "after re-Create")
	})

	t.Run("revisions-increase", func(t *testing.T) {
		ps := newPins(t)
		var last uint64
		for i, id := range []string{"a", "b", "c", "a", "b"} {
			var rev uint64
			var err error
			if i < 3 {
				rev, err = ps.Create(t.Context(), testPin(id, i))
			} else {
				_, cur, gerr := ps.Get(t.Context(), id)
				if gerr != nil {
					t.Fatalf("Get(%q) error = %v", id, gerr)
				}
				rev, err = ps.Update(t.Context(), testPin(id, i), cur)
			}
			if err != nil {
				t.Fatalf("write %d (%q) error = %v", i, id, err)
			}
			if rev <= last {
				t.Fatalf("write %d (%q) rev = %d, want > %d", i, id, rev, last)
			}
			last = rev
		}
	})

	t.Run("ids-delete", func(t *testing.T) {
		ps := newPins(t)
		for name, id := range awkwardIDs() {
			if _, err := ps.Create(t.Context(), testPin(id, 1)); err != nil {
				t.Fatalf("Create(%s %q) error = %v", name, short(id), err)
			}
			if err := ps.Delete(t.Context(), id); err != nil {
				t.Fatalf("Delete(%s) error = %v", name, err)
			}
			if _, _, err := ps.Get(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Get(%s) after Delete error = %v, want %v", name, err, store.ErrNotFound)
			}
		}
	})

	t.Run("invalid-utf8-id", func(t *testing.T) {
		ps := newPins(t)
		if _, err := ps.Create(t.Context(), testPin("bad\xff", 1)); !errors.Is(err, store.ErrInvalidID) {
			t.Fatalf("Create(invalid UTF-8) error = %v, want %v", err, store.ErrInvalidID)
		}
		if _, err := ps.Update(t.Context(), testPin("bad\xff", 1), 1); !errors.Is(err, store.ErrInvalidID) {
			t.Fatalf("Update(invalid UTF-8) error = %v, want %v", err, store.ErrInvalidID)
		}
		if _, _, err := ps.Get(t.Context(), "bad\xff"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(invalid UTF-8) error = %v, want %v", err, store.ErrNotFound)
		}
	})

	t.Run("isolation", func(t *testing.T) {
		ps := newPins(t)
		p := testPin("t1", 1)
		want := jsonOf(t, p)
		if _, err := ps.Create(t.Context(), p); err != nil {
			t.Fatalf("Create() error = %v", err)
		}
		p.Requirements.InputModes[0] = "mutated/by-caller"
		got, _, err := ps.Get(t.Context(), "t1")
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		got.Requirements.OutputModes[0] = "mutated/by-reader"
		again, _, err := ps.Get(t.Context(), "t1")
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		if g := jsonOf(t, again); g != want {
			t.Fatalf("Get() after caller mutations = %s, want %s", g, want)
		}
	})
}

// leasesSuite runs the conformance suite for store.Leases. newLeases returns an
// empty store for each subtest.
func leasesSuite(t *testing.T, newLeases func(t *testing.T) store.Leases) {
	t.Run("scan", func(t *testing.T) {
		scanSuite(t, newLeases(t), func(i int) store.Lease { return testLease("https://scan.example/"+strconv.Itoa(i), i) },
			func(l store.Lease) string { return l.CardURL }, nil)
	})

	casSuite(t, func(t *testing.T) casStore[store.Lease] { return newLeases(t) },
		"https://agent.example.com/.well-known/agent-card.json", casValues[store.Lease]{
			value:  testLease,
			mark:   func(l store.Lease, holder string) store.Lease { l.ETag = holder; return l },
			holder: func(l store.Lease) string { return l.ETag },
		})
}

// scanSuite checks a store.Scanner: every live record once, with its
// revision; an error from fn stops the scan. value makes record i, idOf
// reads its id; del deletes an id (nil: the store cannot delete).
func scanSuite[T any](t *testing.T, s casStore[T], value func(i int) T, idOf func(T) string, del func(id string)) {
	sc, ok := s.(store.Scanner[T])
	if !ok {
		t.Skip("the store does not implement store.Scanner")
	}
	var none []string
	if err := sc.Scan(t.Context(), func(v T, _ uint64) error { none = append(none, idOf(v)); return nil }); err != nil || len(none) != 0 {
		t.Fatalf("Scan of an empty store = %v, %v; want nothing", none, err)
	}
	want := map[string]uint64{}
	for i := range 300 {
		v := value(i)
		want[idOf(v)] = mustCreate(t, s, v)
	}
	if del != nil {
		id := idOf(scanFirst(t, sc))
		del(id)
		delete(want, id)
	}
	got := map[string]uint64{}
	err := sc.Scan(t.Context(), func(v T, rev uint64) error {
		id := idOf(v)
		if _, dup := got[id]; dup {
			t.Errorf("Scan gave %q twice", id)
		}
		got[id] = rev
		return nil
	})
	if err != nil {
		t.Fatalf("Scan() error = %v", err)
	}
	if len(got) != len(want) {
		t.Errorf("Scan gave %d records, want %d", len(got), len(want))
	}
	for id, rev := range want {
		if got[id] != rev {
			t.Errorf("Scan gave %q at revision %d, want %d", id, got[id], rev)
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := sc.Scan(t.Context(), func(T, uint64) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("Scan with fn failing = %v after %d call(s), want the error after 1", err, n)
	}
}

func scanFirst[T any](t *testing.T, sc store.Scanner[T]) T {
	var seen []T
	if err := sc.Scan(t.Context(), func(v T, _ uint64) error { seen = append(seen, v); return nil }); err != nil || len(seen) == 0 {
		t.Fatalf("Scan() = %v, %d records", err, len(seen))
	}
	return seen[0]
}

func TestMemstoreConformance(t *testing.T) {
	t.Run("pins", func(t *testing.T) {
		pinsSuite(t, func(*testing.T) store.Pins[testRecord] { return memstore.NewPins[testRecord]() })
	})
	t.Run("leases", func(t *testing.T) {
		leasesSuite(t, func(*testing.T) store.Leases { return memstore.NewLeases() })
	})
	t.Run("cards", func(t *testing.T) {
		cardsSuite(t, func(*testing.T) store.Cards { return memstore.NewCards() })
	})
}

// padded is a pin of taskID with pad in it, to fill buckets.
func padded(taskID, pad string) testRecord {
	r := testPin(taskID, 0)
	r.Reported = []string{pad}
	return r
}

func TestStorageSharesSplitTheLimit(t *testing.T) {
	var sum int64
	for _, sh := range store.StorageShares {
		sum += sh.Of24
	}
	if sum != 24 {
		t.Fatalf("StorageShares add up to %d/24, want 24/24", sum)
	}
	for _, tc := range []struct {
		name string
		cfg  store.Config
		want int64
	}{
		{"file", store.Config{}, store.DefaultStorageLimit},
		{"memory", store.Config{Storage: jetstream.MemoryStorage}, store.DefaultMemoryStorageLimit},
		{"set", store.Config{StorageLimit: 48 << 20}, 48 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.SetDefaults()
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			var total int64
			for name, v := range cfg.Limits() {
				if v < store.MinMaxBytes {
					t.Errorf("limit of %s = %d, want ≥ %d", name, v, store.MinMaxBytes)
				}
				total += v
			}
			if total != tc.want || cfg.StorageLimitOf() != tc.want {
				t.Fatalf("limits add up to %d (StorageLimitOf %d), want %d", total, cfg.StorageLimitOf(), tc.want)
			}
		})
	}
	// An explicit limit is kept; the others keep their shares.
	cfg := store.Config{Topology: topology.Topology{LifecycleMaxBytes: 3 << 30}}
	cfg.SetDefaults()
	if l := cfg.Limits(); l["A2A_TASKS"] != 3<<30 || l["CARD_EVENTS"] != store.DefaultStorageLimit/6 {
		t.Fatalf("limits of A2A_TASKS, CARD_EVENTS = %d, %d, want %d, %d", l["A2A_TASKS"], l["CARD_EVENTS"], int64(3<<30), int64(store.DefaultStorageLimit/6))
	}
	// Storage changed after the defaults: the memory default applies.
	cfg = store.DefaultConfig()
	cfg.Storage = jetstream.MemoryStorage
	if got := cfg.StorageLimitOf(); got != store.DefaultMemoryStorageLimit {
		t.Fatalf("StorageLimitOf() of DefaultConfig with memory storage = %d, want %d", got, store.DefaultMemoryStorageLimit)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		field string
		cfg   store.Config
	}{
		{"StorageLimit", store.Config{StorageLimit: 1 << 20}},
		{"StorageLimit", store.Config{StorageLimit: -1}},
		{"LifecycleMaxBytes", store.Config{Topology: topology.Topology{LifecycleMaxBytes: 1000}}},
		{"DLQMaxBytes", store.Config{Topology: topology.Topology{DLQMaxBytes: -5}}},
		{"PinsMaxBytes", store.Config{PinsMaxBytes: 1}},
		{"CardsMaxBytes", store.Config{CardsMaxBytes: 1 << 20, CardsMaxValueSize: 2 << 20}},
		{"LifecycleMaxMsgSize", store.Config{Topology: topology.Topology{LifecycleMaxBytes: 1 << 20, LifecycleMaxMsgSize: 2 << 20}}},
		{"LifecycleMaxMsgSize", store.Config{Topology: topology.Topology{LifecycleMaxMsgSize: 10}}},
	} {
		cfg := tc.cfg
		cfg.SetDefaults()
		err := cfg.Validate()
		var ce *store.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Validate(%+v) = %v, want a *ConfigError on %s", tc.cfg, err, tc.field)
		}
	}
}

// TestProvisionByteLimits: every stream and bucket has its byte limit and
// discards its oldest messages; the lifecycle stream bounds its messages
// so that their dead letters fit.
func TestProvisionByteLimits(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		cfg := store.DefaultConfig()
		mustProvision(t, js, cfg)
		s := takeSnapshot(t, js)
		for name, want := range cfg.Limits() {
			info := s.streams[name]
			if info == nil {
				t.Fatalf("stream %s missing", name)
			}
			if info.Config.MaxBytes != want || info.Config.Discard != jetstream.DiscardOld {
				t.Errorf("stream %s MaxBytes, Discard = %d, %v, want %d, DiscardOld", name, info.Config.MaxBytes, info.Config.Discard, want)
			}
		}
		if got := s.streams["A2A_TASKS"].Config.MaxMsgSize; got != topology.DefaultLifecycleMaxMsgSize {
			t.Errorf("A2A_TASKS MaxMsgSize = %d, want %d", got, topology.DefaultLifecycleMaxMsgSize)
		}
		if !s.streams["KV_carddrift-cards"].Config.AllowMsgTTL {
			t.Errorf("KV_carddrift-cards AllowMsgTTL = false, want true (the GC's purge markers expire)")
		}
	})
}

// TestProvisionUpdatesBuckets: buckets made before byte limits (as
// nats.go makes them: DiscardNew, no MaxBytes) get their limits and
// DiscardOld in place, their keys kept; a second Provision with lower
// limits lowers them, and the streams hold no more than the new limit.
func TestProvisionUpdatesBuckets(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		ctx := t.Context()
		old, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: store.DefaultPinsBucket, History: 1, TTL: 24 * time.Hour})
		if err != nil {
			t.Fatalf("CreateOrUpdateKeyValue() error = %v", err)
		}
		if _, err := old.Put(ctx, "kept", []byte("{}")); err != nil {
			t.Fatalf("Put() error = %v", err)
		}
		if _, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: store.DefaultCardsObjectBucket}); err != nil {
			t.Fatalf("CreateOrUpdateObjectStore() error = %v", err)
		}
		cfg := store.Config{StorageLimit: 240 << 20}
		if err := store.Provision(ctx, js, cfg); err != nil {
			t.Fatalf("Provision() error = %v", err)
		}
		for name, want := range map[string]int64{"KV_carddrift-pins": 40 << 20, "OBJ_carddrift-cards-large": 20 << 20} {
			info := streamInfo(t, js, name)
			if info.Config.MaxBytes != want || info.Config.Discard != jetstream.DiscardOld {
				t.Fatalf("%s MaxBytes, Discard = %d, %v, want %d, DiscardOld", name, info.Config.MaxBytes, info.Config.Discard, want)
			}
		}
		if _, err := old.Get(ctx, "kept"); err != nil {
			t.Fatalf("Get(kept) after Provision error = %v", err)
		}

		// Fill the lifecycle stream past what the lower limit will allow.
		payload := []byte(strings.Repeat("x", 64<<10))
		for i := range 400 { // 25 MiB
			if _, err := js.Publish(ctx, fmt.Sprintf("a2a.task.status.t%d", i), payload); err != nil {
				t.Fatalf("Publish(%d) error = %v", i, err)
			}
		}
		lower := store.Config{StorageLimit: 24 << 20} // A2A_TASKS: 8 MiB
		if err := store.Provision(ctx, js, lower); err != nil {
			t.Fatalf("Provision(lower) error = %v", err)
		}
		info := streamInfo(t, js, "A2A_TASKS")
		if info.Config.MaxBytes != 8<<20 || info.State.Bytes > 8<<20 || info.State.FirstSeq == 1 {
			t.Fatalf("A2A_TASKS after lowering: MaxBytes %d, Bytes %d, FirstSeq %d; want 8 MiB, ≤ 8 MiB, > 1",
				info.Config.MaxBytes, info.State.Bytes, info.State.FirstSeq)
		}
		if info.State.LastSeq != 400 {
			t.Fatalf("A2A_TASKS LastSeq = %d, want 400 (the newest kept)", info.State.LastSeq)
		}
	})
}

func streamInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.StreamInfo {
	t.Helper()
	s, err := js.Stream(t.Context(), name)
	if err != nil {
		t.Fatalf("Stream(%s) error = %v", name, err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatalf("Info(%s) error = %v", name, err)
	}
	return info
}

// TestFullStoresNeverRefuse: a pins bucket and a dead-letter stream at
// their limits keep taking writes; the oldest go first.
func TestFullStoresNeverRefuse(t *testing.T) {
	withJS(t, func(js jetstream.JetStream) {
		ctx := t.Context()
		cfg := store.Config{StorageLimit: 24 << 20} // pins 4 MiB, DLQ 2 MiB
		st, err := store.Open[testRecord](ctx, js, cfg)
		if err != nil {
			t.Fatalf("Open() error = %v", err)
		}
		pad := strings.Repeat("p", 8<<10)
		const n = 1200 // ~10 MiB of pins
		for i := range n {
			if _, err := st.Pins.Create(ctx, padded(fmt.Sprintf("task-%d", i), pad)); err != nil {
				t.Fatalf("Create(task-%d) into a full bucket error = %v", i, err)
			}
		}
		if _, _, err := st.Pins.Get(ctx, "task-0"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(task-0) error = %v, want ErrNotFound (the oldest pin dropped)", err)
		}
		if _, _, err := st.Pins.Get(ctx, fmt.Sprintf("task-%d", n-1)); err != nil {
			t.Fatalf("Get(newest) error = %v", err)
		}
		if info := streamInfo(t, js, "KV_carddrift-pins"); info.State.Bytes > 4<<20 {
			t.Fatalf("pins bucket holds %d bytes, limit %d", info.State.Bytes, 4<<20)
		}
		for i := range 300 { // ~19 MiB of dead letters into 2 MiB
			m := nats.NewMsg(fmt.Sprintf("carddrift.dlq.x.%d", i))
			m.Data = []byte(strings.Repeat("d", 64<<10))
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Fatalf("dead letter %d into a full stream error = %v", i, err)
			}
		}
		if info := streamInfo(t, js, "CARDDRIFT_DLQ"); info.State.Bytes > 2<<20 || info.State.LastSeq != 300 {
			t.Fatalf("CARDDRIFT_DLQ holds %d bytes up to seq %d, want ≤ %d up to 300", info.State.Bytes, info.State.LastSeq, 2<<20)
		}
	})
}

// TestProvisionStorageExceeded: limits the server cannot reserve are
// ErrStorageExceeded, not a bare server error.
func TestProvisionStorageExceeded(t *testing.T) {
	_, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStreamMaxStore = 64 << 20 })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := store.Provision(ctx, js, store.DefaultConfig()); !errors.Is(err, store.ErrStorageExceeded) {
		t.Fatalf("Provision(6 GiB on a 64 MiB server) error = %v, want ErrStorageExceeded", err)
	}
	if err := store.Provision(ctx, js, store.Config{StorageLimit: 48 << 20}); err != nil {
		t.Fatalf("Provision(48 MiB on a 64 MiB server) error = %v", err)
	}
}

// provisionErr provisions a small config on js within d and returns the
// error (which the test wants).
func provisionErr(t *testing.T, js jetstream.JetStream, cfg store.Config, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	if cfg.StorageLimit == 0 {
		cfg.StorageLimit = 24 << 20
	}
	err := store.Provision(ctx, js, cfg)
	if err == nil {
		t.Fatal("Provision succeeded; the test wants it to fail")
	}
	return err
}

// Errors of a deployment still forming, each from a real server: waiting
// cures them.
func TestWaitingOnADeploymentStillForming(t *testing.T) {
	t.Run("no JetStream", func(t *testing.T) {
		_, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStream = false })
		err := provisionErr(t, js, store.Config{}, 10*time.Second)
		wantWaiting(t, err, "JetStream")
	})
	t.Run("no answer", func(t *testing.T) {
		// Something takes JetStream's requests and never answers them (a
		// server whose JetStream is not up yet looks so to its clients).
		_, nc, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStream = false })
		sub, err := nc.SubscribeSync("$JS.API.>")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		err = provisionErr(t, js, store.Config{}, 300*time.Millisecond)
		wantWaiting(t, err, "timed out")
	})
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		_, err = nats.Connect("nats://"+addr, nats.Timeout(2*time.Second))
		if err == nil {
			t.Fatal("connected to a closed port")
		}
		wantWaiting(t, err, "NATS server")
	})
	// The errors of a cluster still electing or placing, as the server
	// builds them and as they travel (its ApiError in JSON, read by
	// nats.go): an in-process cluster does not reliably produce them on
	// cue; TestCluster meets them for real.
	for _, tc := range []struct {
		err  *server.ApiError
		want string
	}{
		{server.NewJSClusterNoPeersError(errors.New("peer offline")), "peers"},
		{server.NewJSClusterNotAvailError(), "meta leader"},
		{server.NewJSClusterNotLeaderError(), "meta leader"},
		{server.NewJSStreamOfflineError(), "offline"},
		{server.NewJSNotEnabledError(), "JetStream"},
	} {
		b, err := json.Marshal(tc.err)
		if err != nil {
			t.Fatal(err)
		}
		var apiErr jetstream.APIError
		if err := json.Unmarshal(b, &apiErr); err != nil {
			t.Fatal(err)
		}
		err = fmt.Errorf("store: provision stream A2A_TASKS: %w", &apiErr)
		wantWaiting(t, err, tc.want)
	}
}

// Errors waiting does not cure, each from a real server.
func TestWaitingNotOnPermanentErrors(t *testing.T) {
	_, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStreamMaxStore = 64 << 20 })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// Another stream holds the lifecycle subjects already.
	createStream(t, js, jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{"a2a.task.>"}})
	overlap := provisionErr(t, js, store.Config{}, 10*time.Second)
	if err := js.DeleteStream(ctx, "SQUATTER"); err != nil {
		t.Fatal(err)
	}
	// Deleting an account's last stream, the server removes the account's
	// streams directory as it goes, racing a create right after it: "could
	// not create storage directory … no such file or directory" (its log),
	// 500 err_code 10049 to the client — about 1 in 60 runs under -race.
	var err error
	natstest.Eventually(t, 10*time.Second, "provisioned after the squatter left", func() bool {
		err = store.Provision(ctx, js, store.Config{StorageLimit: 24 << 20})
		return err == nil
	})
	for name, err := range map[string]error{
		"subjects overlap":         overlap,
		"storage cannot change":    provisionErr(t, js, store.Config{Storage: jetstream.MemoryStorage}, 10*time.Second),
		"replicas without cluster": provisionErr(t, js, store.Config{Replicas: 3, StorageLimit: 30 << 20}, 10*time.Second),
		"limits over the server's": provisionErr(t, js, store.Config{StorageLimit: 1 << 30}, 10*time.Second),
		"invalid config":           provisionErr(t, js, store.Config{PinsBucket: "no.dots"}, 10*time.Second),
		"cancelled":                cancelledErr(t, js),
		"nil":                      nil,
	} {
		if got := store.Waiting(err); got != "" {
			t.Errorf("%s: Waiting(%v) = %q, want \"\" (permanent)", name, err, got)
		}
	}
}

// cancelledErr is Provision's error under a context cancelled by its
// caller (a shutdown).
func cancelledErr(t *testing.T, js jetstream.JetStream) error {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := store.Provision(ctx, js, store.Config{StorageLimit: 24 << 20})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Provision(cancelled) = %v, want context.Canceled", err)
	}
	return err
}

// TestWaitingOnAStreamStillForming: two workers provisioning a cluster at
// once (TestCluster under load): one's create finds the stream "already in
// use" (the other's is placed), and its info then answers "stream not
// found" (its replicas are not up yet). Provision waits for it, as it waits
// for a cluster forming, instead of failing at start-up. The server here
// answers JetStream's requests exactly so.
func TestWaitingOnAStreamStillForming(t *testing.T) {
	_, nc, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStream = false })
	apiErr := func(e *server.ApiError) []byte {
		b, err := json.Marshal(struct {
			Type  string           `json:"type"`
			Error *server.ApiError `json:"error"`
		}{"io.nats.jetstream.api.v1.stream_info_response", e})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sub, err := nc.Subscribe("$JS.API.STREAM.>", func(m *nats.Msg) {
		switch {
		case strings.HasPrefix(m.Subject, "$JS.API.STREAM.INFO."):
			m.Respond(apiErr(server.NewJSStreamNotFoundError()))
		case strings.HasPrefix(m.Subject, "$JS.API.STREAM.CREATE."):
			m.Respond(apiErr(server.NewJSStreamNameExistError()))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	err = provisionErr(t, js, store.Config{}, 10*time.Second)
	wantWaiting(t, err, "stream being created")
}

// fillUntilRefused publishes 16 KiB messages to subject until a publish
// fails, and returns that error.
func fillUntilRefused(t *testing.T, js jetstream.JetStream, subject string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	body := []byte(strings.Repeat("x", 16<<10))
	for i := range 10_000 {
		if _, err := js.Publish(ctx, subject, body); err != nil {
			t.Logf("refused after %d messages: %v", i, err)
			return err
		}
	}
	t.Fatalf("160 MB published to %s and none refused", subject)
	return nil
}

// Writes refused for lack of space, each by a real server: NoSpace says
// why, for a publish and for a KV write alike.
func TestNoSpace(t *testing.T) {
	t.Run("server storage full", func(t *testing.T) {
		_, _, js := natstest.StartJetStreamWith(t, func(o *server.Options) { o.JetStreamMaxStore = 2 << 20 })
		ctx := t.Context()
		createStream(t, js, jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill"}})
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "pins", MaxBytes: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		err = fillUntilRefused(t, js, "fill")
		if got := store.NoSpace(err); got != "server storage full" {
			t.Errorf("NoSpace(%v) = %q, want server storage full", err, got)
		}
		_, err = kv.Put(ctx, "task", []byte("pin"))
		if got := store.NoSpace(fmt.Errorf("store: update pin %q: %w", "task", err)); got != "server storage full" {
			t.Errorf("NoSpace(KV put: %v) = %q, want server storage full", err, got)
		}
	})
	t.Run("account storage limit", func(t *testing.T) {
		dir := t.TempDir()
		conf := filepath.Join(dir, "nats.conf")
		if err := os.WriteFile(conf, []byte(fmt.Sprintf(`
jetstream { store_dir: %q }
accounts { A: { jetstream: { max_file: 1MB, max_mem: 1MB }, users: [ { user: a, password: a } ] } }
`, filepath.Join(dir, "js"))), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, js := natstest.StartConf(t, conf, nats.UserInfo("a", "a"))
		createStream(t, js, jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill"}})
		err := fillUntilRefused(t, js, "fill")
		if got := store.NoSpace(err); got != "account storage limit reached" {
			t.Errorf("NoSpace(%v) = %q, want account storage limit reached", err, got)
		}
	})
	t.Run("stream at its limit", func(t *testing.T) {
		_, _, js := natstest.StartJetStream(t)
		createStream(t, js, jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill"},
			MaxBytes: 256 << 10, Discard: jetstream.DiscardNew})
		err := fillUntilRefused(t, js, "fill")
		if got := store.NoSpace(err); got != "stream at its limit" {
			t.Errorf("NoSpace(%v) = %q, want stream at its limit", err, got)
		}
	})
	t.Run("not for lack of space", func(t *testing.T) {
		_, _, js := natstest.StartJetStream(t)
		ctx := t.Context()
		createStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, MaxMsgSize: 1024,
			MaxBytes: 1 << 20, Discard: jetstream.DiscardNew})
		_, tooLarge := js.Publish(ctx, "s", make([]byte, 2048))
		_, wrongSeq := js.Publish(ctx, "s", []byte("x"), jetstream.WithExpectLastSequence(42))
		_, noStream := js.Publish(ctx, "nowhere", []byte("x"))
		for _, err := range []error{tooLarge, wrongSeq, noStream, nil} {
			if got := store.NoSpace(err); got != "" {
				t.Errorf("NoSpace(%v) = %q, want \"\"", err, got)
			}
		}
		if tooLarge == nil || wrongSeq == nil || noStream == nil {
			t.Errorf("the server took a write it should refuse: %v, %v, %v", tooLarge, wrongSeq, noStream)
		}
	})
}

// withJS runs fn with a JetStream client of a fresh embedded server
// (natstest.StartJetStream), shut down when the test ends.
func withJS(tb testing.TB, fn func(js jetstream.JetStream)) {
	tb.Helper()
	fn(startJS(tb))
}

// startJS is withJS for tests that need the client outside a closure.
func startJS(tb testing.TB) jetstream.JetStream {
	tb.Helper()
	_, _, js := natstest.StartJetStream(tb)
	return js
}

// wantWaiting checks that Waiting(err) says what provisioning waits for:
// it mentions want.
func wantWaiting(t *testing.T, err error, want string) {
	t.Helper()
	if got := store.Waiting(err); !strings.Contains(got, want) {
		t.Errorf("Waiting(%v) = %q, want it to mention %q", err, got, want)
	}
}

// createStream creates the stream cfg, which must succeed.
func createStream(t *testing.T, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	t.Helper()
	if _, err := js.CreateStream(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
}

// bucketSeq names fresh buckets within one server.
var bucketSeq atomic.Int64

func freshName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, bucketSeq.Add(1))
}

// TestStorageJobsUnderShippedPermissions: provisioning with byte limits,
// the Monitor and CardsGC (a large body included) need nothing the
// shipped CARDDRIFT user may not publish.
func TestStorageJobsUnderShippedPermissions(t *testing.T) {
	sh := natstest.StartShipped(t, filepath.Join("..", "deployments", "nats", "accounts.conf"))
	js := sh.JS
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	cfg := store.Config{StorageLimit: 96 << 20, CardsInlineMax: 1 << 10}
	st, err := store.Open[testRecord](ctx, js, cfg)
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
		References: store.PinLeaseReferences(st.Pins, func(r testRecord) []string { return []string{r.Digest} }, st.Leases),
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
	if violations := sh.Violations(); len(violations) > 0 {
		t.Fatalf("permission violations: %v", violations)
	}
}

// TestObjectPutsUnderShippedPermissions: the two object-store calls that
// end in a STREAM.PURGE of one chunk subject (nats.go's Put sends it after
// an upload that failed, for its partial chunks, and after replacing an
// object, for the old chunks) are allowed to the shipped CARDDRIFT user,
// and do their cleanup. Before accounts.conf granted the purge, both were
// permission violations (TestCluster caught the first: a put that timed
// out under load) and left their chunks behind.
func TestObjectPutsUnderShippedPermissions(t *testing.T) {
	sh := natstest.StartShipped(t, filepath.Join("..", "deployments", "nats", "accounts.conf"))
	js := sh.JS
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// An object store of the smallest byte limit: two bodies of 600 KiB do
	// not fit, so the second one's upload discards the first one's oldest
	// chunks.
	cfg := store.Config{StorageLimit: 96 << 20, CardsInlineMax: 1 << 10, CardsObjectMaxBytes: store.MinMaxBytes}
	st, err := store.Open[testRecord](ctx, js, cfg)
	if err != nil {
		t.Fatalf("Open() under the shipped permissions: %v", err)
	}
	body := func(c string) []byte {
		return []byte(`{"name":"large ` + c + `","description":"` + strings.Repeat(c, 600<<10) + `"}`)
	}
	a, b := body("a"), body("b")
	for _, raw := range [][]byte{a, b} {
		if err := st.Cards.Put(ctx, digestOf(raw), raw); err != nil {
			t.Fatalf("Put(%d bytes): %v", len(raw), err)
		}
	}
	if _, err := st.Cards.Get(ctx, digestOf(a)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(a) after b discarded its chunks = %v, want ErrNotFound", err)
	}
	// Stored again: the object is replaced (nats.go purges the old chunks).
	if err := st.Cards.Put(ctx, digestOf(a), a); err != nil {
		t.Fatalf("Put(a) again: %v", err)
	}
	if got, err := st.Cards.Get(ctx, digestOf(a)); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("Get(a) after it was stored again = %d bytes, %v; want the %d stored", len(got), err, len(a))
	}

	// An upload that fails after its first chunk: nats.go purges what it
	// sent, so the stream holds what it held before.
	obj, err := js.ObjectStore(ctx, store.DefaultCardsObjectBucket)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, "OBJ_"+store.DefaultCardsObjectBucket)
	if err != nil {
		t.Fatal(err)
	}
	errRead := errors.New("the body's reader failed")
	_, err = obj.Put(ctx, jetstream.ObjectMeta{Name: "failed-upload"}, io.MultiReader(bytes.NewReader(a[:200<<10]), iotest.ErrReader(errRead)))
	if !errors.Is(err, errRead) {
		t.Fatalf("Put with a failing reader = %v, want %v", err, errRead)
	}
	// Every chunk subject left is an object's (the failed upload's were
	// purged, and so were the replaced object's old ones).
	objects, err := obj.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, o := range objects {
		live["$O."+store.DefaultCardsObjectBucket+".C."+o.NUID] = true
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter("$O."+store.DefaultCardsObjectBucket+".C.>"))
	if err != nil {
		t.Fatal(err)
	}
	for subj, n := range info.State.Subjects {
		if !live[subj] {
			t.Errorf("%d chunk(s) on %s, which is no object's: not purged", n, subj)
		}
	}
	if violations := sh.Violations(); len(violations) > 0 {
		t.Fatalf("permission violations: %v", violations)
	}
}

func digestOf(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// TestCardsGC: bodies no pin or lease references are removed after two
// sweeps (the large one from the Object Store too); referenced ones stay
// until their pin and lease are gone; a removed body can be stored again.
func TestCardsGC(t *testing.T) {
	js, st := openStores(t, store.Config{StorageLimit: 24 << 20, CardsInlineMax: 1 << 10})
	ctx := t.Context()
	body := func(s string) ([]byte, string) { b := []byte(`{"name":"` + s + `"}`); return b, digestOf(b) }
	pinned, pinnedD := body("pinned")
	leased, leasedD := body("leased")
	orphan, orphanD := body("orphan")
	large := []byte(`{"name":"large","description":"` + strings.Repeat("L", 4<<10) + `"}`)
	largeD := digestOf(large)
	for _, c := range []struct {
		raw    []byte
		digest string
	}{{pinned, pinnedD}, {leased, leasedD}, {orphan, orphanD}, {large, largeD}} {
		if err := st.Cards.Put(ctx, c.digest, c.raw); err != nil {
			t.Fatalf("Put(%s) error = %v", c.digest, err)
		}
	}
	pin := testPin("task-1", 0)
	pin.Digest = pinnedD
	if _, err := st.Pins.Create(ctx, pin); err != nil {
		t.Fatalf("Create(pin) error = %v", err)
	}
	lease := store.Lease{CardURL: "https://agent.example.com/.well-known/agent-card.json", Digest: leasedD, FetchedAt: time.Now()}
	if _, err := st.Leases.Create(ctx, lease); err != nil {
		t.Fatalf("Create(lease) error = %v", err)
	}

	now := time.Now()
	reg := prometheus.NewPedanticRegistry()
	gc := newGC(t, js, st.Cards, store.GCOptions{
		References: store.PinLeaseReferences(st.Pins, func(r testRecord) []string { return []string{r.Digest} }, st.Leases),
		Grace:      time.Hour, Now: func() time.Time { return now }, Registerer: reg,
	})
	sweep := func(wantRemoved int) store.SweepResult {
		t.Helper()
		res, err := gc.Sweep(ctx)
		if err != nil || res.Removed != wantRemoved {
			t.Fatalf("Sweep() = %+v, %v, want %d removed", res, err, wantRemoved)
		}
		return res
	}
	has := func(digest string) bool {
		t.Helper()
		_, err := st.Cards.Get(ctx, digest)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(%s) error = %v", digest, err)
		}
		return err == nil
	}

	// Within the grace period nothing is a candidate.
	sweep(0)
	sweep(0)
	now = now.Add(2 * time.Hour)
	if res := sweep(0); res.Candidates != 2 { // first strike: orphan, large
		t.Fatalf("first sweep past grace: %+v, want 2 candidates", res)
	}
	sweep(2)
	for d, want := range map[string]bool{pinnedD: true, leasedD: true, orphanD: false, largeD: false} {
		if got := has(d); got != want {
			t.Fatalf("after two sweeps, body %s present = %v, want %v", d, got, want)
		}
	}
	key, _ := store.DigestKey(largeD)
	obj, err := js.ObjectStore(ctx, store.DefaultCardsObjectBucket)
	if err != nil {
		t.Fatalf("ObjectStore() error = %v", err)
	}
	if _, err := obj.GetInfo(ctx, key); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("object of the large body: GetInfo error = %v, want ErrObjectNotFound", err)
	}
	// Its chunks are gone too (no STREAM.PURGE: a rollup), not just its name.
	if info := streamInfo(t, js, "OBJ_"+store.DefaultCardsObjectBucket); info.State.Bytes >= uint64(len(large)) {
		t.Fatalf("object store holds %d bytes after the removal, want less than the %d-byte body", info.State.Bytes, len(large))
	}

	// The pin and the lease go: their bodies follow.
	if err := st.Pins.Delete(ctx, "task-1"); err != nil {
		t.Fatalf("Delete(pin) error = %v", err)
	}
	if err := st.Leases.KV().Delete(ctx, store.EncodeKey(lease.CardURL)); err != nil {
		t.Fatalf("delete lease error = %v", err)
	}
	sweep(0)
	sweep(2)
	if has(pinnedD) || has(leasedD) {
		t.Fatalf("bodies of a deleted pin and lease still present")
	}
	if got := valueOfPlain(t, reg, "carddrift_store_cards_removed_total"); got != 4 {
		t.Fatalf("carddrift_store_cards_removed_total = %v, want 4", got)
	}

	// A removed body is stored again when it comes back.
	if err := st.Cards.Put(ctx, orphanD, orphan); err != nil || !has(orphanD) {
		t.Fatalf("Put(removed body) = %v, present %v", err, has(orphanD))
	}
}

// TestCardsGCBatch: a sweep reads at most Batch bodies, and successive
// sweeps walk the whole bucket.
func TestCardsGCBatch(t *testing.T) {
	js, st := openStores(t, store.Config{StorageLimit: 24 << 20})
	ctx := t.Context()
	const n = 5
	for i := range n {
		b := []byte(`{"n":` + string(rune('0'+i)) + `}`)
		if err := st.Cards.Put(ctx, digestOf(b), b); err != nil {
			t.Fatalf("Put() error = %v", err)
		}
	}
	now := time.Now().Add(2 * time.Hour)
	gc := newGC(t, js, st.Cards, store.GCOptions{
		References: func(_ context.Context, mark func(string)) error { return nil },
		Batch:      2, Now: func() time.Time { return now },
	})
	removed := 0
	for i := range 8 {
		res, err := gc.Sweep(ctx)
		if err != nil {
			t.Fatalf("Sweep(%d) error = %v", i, err)
		}
		if res.Examined > 2 {
			t.Fatalf("Sweep(%d) examined %d bodies, want ≤ 2", i, res.Examined)
		}
		removed += res.Removed
	}
	if removed != n {
		t.Fatalf("8 sweeps of batch 2 removed %d of %d unreferenced bodies", removed, n)
	}
}

// TestCardsGCKeepsOnError: a References that fails removes nothing.
func TestCardsGCKeepsOnError(t *testing.T) {
	js, st := openStores(t, store.Config{StorageLimit: 24 << 20})
	ctx := t.Context()
	b := []byte(`{"name":"x"}`)
	if err := st.Cards.Put(ctx, digestOf(b), b); err != nil {
		t.Fatalf("Put() error = %v", err)
	}
	now := time.Now().Add(2 * time.Hour)
	boom := errors.New("scan failed")
	gc := newGC(t, js, st.Cards, store.GCOptions{
		References: func(_ context.Context, mark func(string)) error { return boom },
		Now:        func() time.Time { return now },
	})
	for range 3 {
		if _, err := gc.Sweep(ctx); !errors.Is(err, boom) {
			t.Fatalf("Sweep() error = %v, want %v", err, boom)
		}
	}
	if _, err := st.Cards.Get(ctx, digestOf(b)); err != nil {
		t.Fatalf("Get() after failed sweeps error = %v, want the body kept", err)
	}
}

// valueOfPlain returns the value of an unlabelled counter or gauge in reg.
func valueOfPlain(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s in the registry", name)
	return 0
}

// TestCardsGCPinWrittenAfterScan: a pin written between a sweep's
// reference scan and its removals (the worker stores a body that is
// already there, a no-op, then writes the pin naming it) keeps its body,
// inline or in the Object Store. The scan cannot see the pin; the sweep
// must not leave it naming a removed body.
func TestCardsGCPinWrittenAfterScan(t *testing.T) {
	js, st := openStores(t, store.Config{StorageLimit: 24 << 20, CardsInlineMax: 1 << 10})
	ctx := t.Context()
	small := []byte(`{"name":"client card"}`)
	large := []byte(`{"name":"large","description":"` + strings.Repeat("L", 4<<10) + `"}`)
	smallD, largeD := digestOf(small), digestOf(large)
	for _, b := range [][]byte{small, large} {
		if err := st.Cards.Put(ctx, digestOf(b), b); err != nil {
			t.Fatalf("Put() error = %v", err)
		}
	}
	now := time.Now().Add(2 * time.Hour)
	scans := 0
	scan := store.PinLeaseReferences(st.Pins, func(r testRecord) []string { return []string{r.Digest} }, st.Leases)
	refs := func(ctx context.Context, mark func(string)) error {
		err := scan(ctx, mark)
		scans++
		if scans == 2 { // the second sweep: after its scan, before it removes
			for i, d := range []string{smallD, largeD} {
				// What the worker does: the body is there (Put is a no-op), then the pin.
				if err := st.Cards.Put(ctx, d, map[string][]byte{smallD: small, largeD: large}[d]); err != nil {
					t.Errorf("Put() error = %v", err)
				}
				pin := testPin("task-late-"+string(rune('a'+i)), 0)
				pin.Digest = d
				if _, err := st.Pins.Create(ctx, pin); err != nil {
					t.Errorf("Create(pin) error = %v", err)
				}
			}
		}
		return err
	}
	gc := newGC(t, js, st.Cards, store.GCOptions{References: refs, Now: func() time.Time { return now }})
	sweeps(t, gc, 2)
	for _, c := range []struct {
		d    string
		want []byte
	}{{smallD, small}, {largeD, large}} {
		got, err := st.Cards.Get(ctx, c.d)
		if err != nil || string(got) != string(c.want) {
			t.Errorf("body %s named by a pin written during the sweep: Get() = %d bytes, %v; want it kept", c.d, len(got), err)
		}
	}
	// Nothing references them after the pins go: they are removed then.
	for _, k := range []string{"task-late-a", "task-late-b"} {
		if err := st.Pins.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(pin) error = %v", err)
		}
	}
	if removed := sweeps(t, gc, 2); removed != 2 {
		t.Fatalf("two sweeps after the pins went removed %d bodies, want 2", removed)
	}
}

// TestCardsGCLargeBodyStoredDuringRemoval: a large body stored again while
// a sweep removes it (the writer finds no marker but the object still
// there, so it writes only the marker) is not left as a marker naming a
// deleted object, which every later Put would take for the body stored.
func TestCardsGCLargeBodyStoredDuringRemoval(t *testing.T) {
	js, st := openStores(t, store.Config{StorageLimit: 24 << 20, CardsInlineMax: 1 << 10})
	ctx := t.Context()
	large := []byte(`{"name":"large","description":"` + strings.Repeat("L", 4<<10) + `"}`)
	largeD := digestOf(large)
	if err := st.Cards.Put(ctx, largeD, large); err != nil {
		t.Fatalf("Put() error = %v", err)
	}
	now := time.Now().Add(2 * time.Hour)
	scans := 0
	refs := func(ctx context.Context, mark func(string)) error {
		scans++
		if scans == 3 { // the second sweep, after its purge: a writer brings the body
			if err := st.Cards.Put(ctx, largeD, large); err != nil {
				t.Errorf("Put() during the sweep error = %v", err)
			}
		}
		return nil
	}
	gc := newGC(t, js, st.Cards, store.GCOptions{References: refs, Now: func() time.Time { return now }})
	sweeps(t, gc, 2)
	if scans < 3 {
		t.Fatalf("References called %d times, want the second sweep to check again after purging", scans)
	}
	// Whatever the sweep did, storing the body now must leave it readable.
	if err := st.Cards.Put(ctx, largeD, large); err != nil {
		t.Fatalf("Put() after the sweep error = %v", err)
	}
	if got, err := st.Cards.Get(ctx, largeD); err != nil || string(got) != string(large) {
		t.Fatalf("Get() after Put() = %d bytes, %v; want the body", len(got), err)
	}
}

// TestCardsLargeBodyDroppedByLimit: the large-cards Object Store at its
// byte limit discards its oldest chunks first, which leaves objects whose
// name is still there and some or all of whose chunks are gone. Get of
// every body is then the body or ErrNotFound (as Config.CardsObjectMaxBytes
// promises: judged as pinned by digest alone), never a read that waits for
// chunks that will not come.
func TestCardsLargeBodyDroppedByLimit(t *testing.T) {
	_, st := openStores(t, store.Config{StorageLimit: 24 << 20, CardsInlineMax: 1 << 10, CardsObjectMaxBytes: store.MinMaxBytes})
	ctx := t.Context()
	var ds []string
	for i := range 40 { // 40 bodies of 2 chunks each, 8 MiB into 1 MiB
		b := []byte(`{"n":` + strings.Repeat("1", i+1) + `,"d":"` + strings.Repeat("x", 200<<10) + `"}`)
		ds = append(ds, digestOf(b))
		if err := st.Cards.Put(ctx, ds[i], b); err != nil {
			t.Fatalf("Put(%d) error = %v", i, err)
		}
	}
	found := 0
	for i, d := range ds {
		gctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, err := st.Cards.Get(gctx, d)
		cancel()
		switch {
		case err == nil:
			found++
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("Get(body %d) error = %v, want the body or ErrNotFound", i, err)
		}
	}
	if found == 0 || found == len(ds) {
		t.Fatalf("%d of %d bodies readable, want the newest only", found, len(ds))
	}
	// A dropped body stored again (its marker is still there) is read
	// back: the oldest, and the one whose chunks went only in part.
	for _, i := range []int{0, len(ds) - found - 1} {
		b := []byte(`{"n":` + strings.Repeat("1", i+1) + `,"d":"` + strings.Repeat("x", 200<<10) + `"}`)
		if err := st.Cards.Put(ctx, ds[i], b); err != nil {
			t.Fatalf("Put(body %d) again error = %v", i, err)
		}
		gctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		got, err := st.Cards.Get(gctx, ds[i])
		cancel()
		if err != nil || string(got) != string(b) {
			t.Errorf("Get(body %d) after storing it again = %d bytes, %v; want the body", i, len(got), err)
		}
	}
}

// sweeps runs n sweeps of gc and returns how many bodies they removed.
// openStores opens the stores with cfg on a fresh embedded JetStream.
func openStores(t *testing.T, cfg store.Config) (jetstream.JetStream, *store.Stores[testRecord]) {
	t.Helper()
	js := startJS(t)
	st, err := store.Open[testRecord](t.Context(), js, cfg)
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	return js, st
}

// newGC is NewCardsGC of cards with o, which must succeed.
func newGC(t *testing.T, js jetstream.JetStream, cards *store.KVCards, o store.GCOptions) *store.CardsGC {
	t.Helper()
	gc, err := store.NewCardsGC(js, cards, o)
	if err != nil {
		t.Fatalf("NewCardsGC() error = %v", err)
	}
	return gc
}

func sweeps(t *testing.T, gc *store.CardsGC, n int) (removed int) {
	t.Helper()
	for i := range n {
		res, err := gc.Sweep(t.Context())
		if err != nil {
			t.Fatalf("Sweep(%d) error = %v", i, err)
		}
		removed += res.Removed
	}
	return removed
}
