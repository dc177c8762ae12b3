package store_test

// The conformance suite every implementation of the store interfaces
// passes (KVPins, KVLeases, KVCards, CachedPins and store/memstore), so
// that they behave the same; each suite runs named subtests, calling its
// factory once per subtest for an empty store that lives until the subtest
// ends. Its fixtures (testRecord, testPin, testLease, testDigest, testBody)
// serve the package's other tests.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
)

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
