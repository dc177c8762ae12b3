package detector

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	gowebpki "github.com/gowebpki/jcs"

	"github.com/carddrift/carddrift/detector/jcs"
	"github.com/carddrift/carddrift/detector/jcs/jcstest"
)

// The JCS vectors live in jcs/testdata; the cards in testdata/cards
// (fixtureCards).
const jcsTestdata = "jcs/testdata"

// mustRead returns a test file's content or fails the test.
var mustRead = jcstest.ReadFile

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestDigestTCKVectors runs all 57 vectors of the A2A TCK corpus through the
// digest path: accepted inputs (group A2 with signatures, stripped by
// Digest) hash to the SHA-256 of the expected canonical bytes; rejected ones
// get a typed error.
func TestDigestTCKVectors(t *testing.T) {
	rejects := map[string]error{
		"A2-REJECT-003": nil, // a signing payload that keeps signatures: fine as a served card
		"A2-REJECT-004": nil, // same with an empty array
		"A3-REJECT-011": ErrInvalidUTF8,
		"A3-REJECT-012": ErrInvalidUTF8,
		"A4-REJECT-013": ErrInvalidUTF8,
		"A4-REJECT-014": ErrInvalidUTF8,
		"A4-REJECT-015": ErrInvalidUTF8,
		"A5-REJECT-016": ErrNotJSON,
		"A5-REJECT-017": ErrNotJSON,
		"A5-REJECT-018": ErrNotJSON,
	}
	for _, v := range jcstest.TCK(t, jcsTestdata) {
		t.Run(v.ID, func(t *testing.T) {
			if v.Disposition == "MUST-ACCEPT" {
				want, err := hex.DecodeString(v.Expected.CanonicalUTF8Hex)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Digest(v.Input)
				if err != nil || got != sha256Digest(want) {
					t.Errorf("Digest(%s) = %s, %v; want %s (of %s)", v.Input, got, err, sha256Digest(want), want)
				}
				tree, err := jcs.Parse(v.Input, jcs.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				if c := jcs.AppendWithout(nil, &tree, signaturesKey); !bytes.Equal(c, want) {
					t.Errorf("AppendWithout(%s) = %s, want %s", v.Input, c, want)
				}
				return
			}
			wantErr, ok := rejects[v.ID]
			if !ok {
				t.Fatalf("reject vector %s has no expected error", v.ID)
			}
			if v.InputRaw == nil {
				t.Fatalf("reject vector %s has no input_raw", v.ID)
			}
			in := []byte(*v.InputRaw)
			if wantErr == nil {
				// As a served card it is fine: its digest leaves the signatures out.
				if _, err := Digest(in); err != nil {
					t.Errorf("Digest(%s) = %v, want a digest", in, err)
				}
				return
			}
			_, err := Digest(in)
			var se *SyntaxError
			if !errors.Is(err, wantErr) || !errors.As(err, &se) {
				t.Errorf("Digest(%s) = %v, want a *SyntaxError wrapping %v", in, err, wantErr)
			}
		})
	}
}

func TestDigestCardSigningVectors(t *testing.T) {
	for _, c := range jcstest.SigningCases(t, jcsTestdata) {
		got, err := Digest(c.Card)
		if want := sha256Digest([]byte(c.Expected)); err != nil || got != want {
			t.Errorf("%s: Digest = %s, %v; want %s", c.ID, got, err, want)
		}
	}
}

// independentDigest strips the top-level signatures with encoding/json and
// canonicalizes with github.com/gowebpki/jcs.
func independentDigest(t *testing.T, raw []byte) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "signatures")
	stripped, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gowebpki.Transform(stripped)
	if err != nil {
		t.Fatal(err)
	}
	return sha256Digest(c)
}

// TestDigestCards checks the digest of every fixture card against an
// independent implementation, and that the three entry points agree.
func TestDigestCards(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureCards, "*.json"))
	if err != nil || len(files) != 34 {
		t.Fatalf("found %d cards (%v), want 34", len(files), err)
	}
	signed := 0
	for _, path := range files {
		raw := mustRead(t, path)
		name := filepath.Base(path)
		got, err := Digest(raw)
		if err != nil {
			t.Errorf("Digest(%s) error: %v", name, err)
			continue
		}
		if want := independentDigest(t, raw); got != want {
			t.Errorf("Digest(%s) = %s, independent %s", name, got, want)
		}
		if d, err := digestUncached(raw); err != nil || d != got {
			t.Errorf("digestUncached(%s) = %s, %v; want %s", name, d, err, got)
		}
		v, err := jcs.ParseObject(raw, jcs.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		// The tree path (Parse, AppendWithout) hashes to the same digest.
		if d := sha256Digest(jcs.AppendWithout(nil, &v, signaturesKey)); d != got {
			t.Errorf("digest of the tree of %s = %s, want %s", name, d, got)
		}
		if _, ok := v.Get("signatures"); ok {
			signed++
		}
	}
	if signed < 3 {
		t.Errorf("only %d fixture cards carry signatures; the strip is not exercised", signed)
	}
	a, _ := Digest(mustRead(t, filepath.Join(fixtureCards, "006-docs-v0.3.0-extensions-magic-8-ball.json")))
	b, _ := Digest(mustRead(t, filepath.Join(fixtureCards, "007-docs-v1.0.1-extensions-magic-8-ball.json")))
	if a != b || a == "" {
		t.Errorf("cards 006 and 007 (same card, different whitespace) digest to %s and %s", a, b)
	}
}

func TestDigestInvariants(t *testing.T) {
	base, err := Digest([]byte(`{"name":"A","skills":[{"id":"x","tags":["t"]}],"n":1.5}`))
	if err != nil {
		t.Fatal(err)
	}
	same := []string{
		"\n{ \"skills\" : [ { \"tags\" : [\"t\"], \"id\" : \"x\" } ], \"n\": 15e-1, \"name\": \"\\u0041\" }\n",
		`{"name":"A","skills":[{"id":"x","tags":["t"]}],"n":1.50,"signatures":[{"protected":"p","signature":"s"}]}`,
		`{"name":"A","skills":[{"id":"x","tags":["t"]}],"n":1.5,"signatures":[]}`,
	}
	for _, s := range same {
		if d, err := Digest([]byte(s)); err != nil || d != base {
			t.Errorf("Digest(%s) = %s, %v; want %s", s, d, err, base)
		}
	}
	different := []string{
		`{"name":"B","skills":[{"id":"x","tags":["t"]}],"n":1.5}`,
		`{"name":"A","skills":[{"id":"x","tags":["t"]}],"n":1.6}`,
		`{"name":"A","skills":[{"id":"x","tags":["t"],"signatures":[]}],"n":1.5}`, // only the top level is stripped
		`{"name":"A","skills":[{"id":"x","tags":[]}],"n":1.5}`,
	}
	for _, s := range different {
		if d, err := Digest([]byte(s)); err != nil || d == base {
			t.Errorf("Digest(%s) = %s, %v; want a different digest", s, d, err)
		}
	}
	if !strings.HasPrefix(base, "sha256:") || len(base) != 71 || strings.ToLower(base) != base {
		t.Errorf("Digest = %q, want sha256: and 64 lowercase hex digits", base)
	}
}

func TestDigestErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"not JSON", `{"name":`, ErrNotJSON},
		{"NaN", `{"n":NaN}`, ErrNotJSON},
		{"array", `[{"name":"x"}]`, ErrNotObject},
		{"string", `"card"`, ErrNotObject},
		{"duplicate key", `{"name":"a","name":"b"}`, ErrDuplicateKey},
		{"invalid UTF-8", "{\"name\":\"\xff\"}", ErrInvalidUTF8},
		{"lone surrogate", `{"name":"\udc00"}`, ErrInvalidUTF8},
		{"too large", `{"d":"` + strings.Repeat("x", jcs.DefaultMaxBytes) + `"}`, ErrTooLarge},
		{"too deep", `{"d":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, ErrTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // errors are not memoised
				d, err := Digest([]byte(tt.in))
				var se *SyntaxError
				if !errors.Is(err, tt.want) || !errors.As(err, &se) || d != "" {
					t.Errorf("Digest(%.40q) = %q, %v; want a *SyntaxError wrapping %v", tt.in, d, err, tt.want)
				}
				var jse *jcs.SyntaxError
				if !errors.As(err, &jse) || !errors.Is(err, jse.Err) {
					t.Errorf("Digest(%.40q) error does not match jcs.SyntaxError", tt.in)
				}
			}
		})
	}
}

func TestDigestMemoEviction(t *testing.T) {
	m := NewDigestMemo(2)
	docs := []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}
	for _, d := range docs[:2] {
		if _, err := m.Digest([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Digest([]byte(docs[0])); err != nil { // a hit: b is now the least recently used
		t.Fatal(err)
	}
	got, err := m.Digest([]byte(docs[2]))
	if want, _ := digestUncached([]byte(docs[2])); err != nil || got != want {
		t.Fatalf("Digest(%s) = %s, %v; want %s", docs[2], got, err, want)
	}
	if m.cache.Len() != 2 {
		t.Errorf("Len() = %d, want 2", m.cache.Len())
	}
	for i, wantHeld := range []bool{true, false, true} {
		if held := m.holds([]byte(docs[i])); held != wantHeld {
			t.Errorf("memo holds %s = %v, want %v", docs[i], held, wantHeld)
		}
	}
	if _, err := m.Digest([]byte(`{`)); err == nil || m.cache.Len() != 2 {
		t.Errorf("a failed digest changed the memo: Len() = %d, err %v", m.cache.Len(), err)
	}
	if NewDigestMemo(0).cache.maxLen != 1 {
		t.Error("NewDigestMemo(0) has no room")
	}
}

// holds reports whether m holds the digest of raw.
func (m *DigestMemo) holds(raw []byte) bool {
	m.cache.mu.Lock()
	defer m.cache.mu.Unlock()
	el, ok := m.cache.index[m.key(raw)]
	return ok && m.same(el.Value.(*lruEntry[memoKey, memoEntry]).val, raw)
}

// TestDigestMemoVerifies checks that a hit is a body equal to the one held,
// not only one of the same hash: a body filed under another body's hash
// (as a hash collision would) gets its own digest and takes the slot.
func TestDigestMemoVerifies(t *testing.T) {
	m := NewDigestMemo(4)
	a, b := []byte(`{"a":1}`), []byte(`{"b":2}`)
	if _, err := m.Digest(a); err != nil {
		t.Fatal(err)
	}
	kb := m.key(b)
	m.cache.mu.Lock()
	el := m.cache.index[m.key(a)]
	e := el.Value.(*lruEntry[memoKey, memoEntry])
	delete(m.cache.index, e.key)
	e.key, m.cache.index[kb] = kb, el // a now sits where b's hash leads
	m.cache.mu.Unlock()
	want, _ := digestUncached(b)
	if got, err := m.Digest(b); err != nil || got != want {
		t.Fatalf("Digest(%s) = %s, %v; want %s", b, got, err, want)
	}
	if !m.holds(b) || m.cache.Len() != 1 {
		t.Errorf("after the collision the memo holds b = %v, Len() = %d; want true, 1", m.holds(b), m.cache.Len())
	}
}

// TestDigestMemoBytes checks the bound on the bodies held: older bodies are
// evicted to make room, and a body over the bound is not memoised.
func TestDigestMemoBytes(t *testing.T) {
	m := NewDigestMemo(100)
	m.cache.maxCost = 64
	body := func(i int) []byte { return fmt.Appendf(nil, `{"k":"%030d"}`, i) } // 38 bytes
	for i := range 5 {
		if _, err := m.Digest(body(i)); err != nil {
			t.Fatal(err)
		}
		if m.cache.cost > m.cache.maxCost || m.cache.Len() != 1 || !m.holds(body(i)) {
			t.Fatalf("after body %d: %d bytes held in %d entries, holds it %v", i, m.cache.cost, m.cache.Len(), m.holds(body(i)))
		}
	}
	big := fmt.Appendf(nil, `{"k":"%070d"}`, 0)
	want, _ := digestUncached(big)
	if got, err := m.Digest(big); err != nil || got != want || m.holds(big) || !m.holds(body(4)) {
		t.Errorf("a body over the bound: Digest = %s, %v (want %s); held %v", got, err, want, m.holds(big))
	}
	// A body over DigestMemoBody is memoised by its SHA-256, not kept.
	long := fmt.Appendf(nil, `{"k":"%0*d"}`, DigestMemoBody, 0)
	want, _ = digestUncached(long)
	for range 2 {
		if got, err := m.Digest(long); err != nil || got != want || !m.holds(long) || m.cache.cost > m.cache.maxCost {
			t.Fatalf("a long body: Digest = %s, %v (want %s); held %v, %d bytes held", got, err, want, m.holds(long), m.cache.cost)
		}
	}
}

func TestDigestMemoConcurrent(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtureCards, "*.json"))
	raws := make([][]byte, len(files))
	want := make([]string, len(files))
	for i, f := range files {
		raws[i] = mustRead(t, f)
		want[i], _ = digestUncached(raws[i])
	}
	m := NewDigestMemo(8) // smaller than the set: constant eviction
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := (g*7 + i) % len(raws)
				if got, _ := m.Digest(raws[k]); got != want[k] {
					t.Errorf("Digest(%s) = %s, want %s", files[k], got, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
	if m.cache.Len() > 8 {
		t.Errorf("Len() = %d, want at most 8", m.cache.Len())
	}
}

func ExampleDigest() {
	a, _ := Digest([]byte(`{"name": "Example Agent", "capabilities": {"streaming": true}}`))
	b, _ := Digest([]byte(`{"capabilities":{"streaming":true},"name":"Example Agent","signatures":[]}`))
	fmt.Println(a == b)
	fmt.Println(a)
	_, err := Digest([]byte(`{"name": "a", "name": "b"}`))
	fmt.Println(errors.Is(err, ErrDuplicateKey), err)
	// Output:
	// true
	// sha256:f56ef008fafc7f3324d186eafa851de45453970886bf16335c05359851eb3460
	// true duplicate object key at byte 14: key "name"
}
