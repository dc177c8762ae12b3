package fetcher

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/carddrift/carddrift/detector/signature"
)

// jwksServer serves a key set with a Cache-Control, counting requests.
type jwksServer struct {
	srv      *httptest.Server
	requests atomic.Int64
	mu       sync.Mutex
	body     []byte
	cc       string
	gate     chan struct{} // when set, requests wait for it to close
}

func newJWKSServer(t testing.TB, body []byte, cacheControl string) *jwksServer {
	t.Helper()
	s := &jwksServer{body: body, cc: cacheControl}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		body, cc, gate := s.body, s.cc, s.gate
		s.mu.Unlock()
		if gate != nil {
			<-gate
		}
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *jwksServer) set(body []byte, cc string) {
	s.mu.Lock()
	s.body, s.cc = body, cc
	s.mu.Unlock()
}

// hold makes requests wait until the returned func is called.
func (s *jwksServer) hold() (release func()) { return holdGate(&s.mu, &s.gate) }

func (s *jwksServer) url() string { return s.srv.URL + "/.well-known/jwks.json" }

// testSigner is a P-256 key and its public JWKS.
type testSigner struct {
	key  *ecdsa.PrivateKey
	kid  string
	jwks []byte
}

func newTestSigner(t testing.TB, kid string) testSigner {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testSigner{key: k, kid: kid, jwks: jwksJSON(t, jose.JSONWebKey{Key: k.Public(), KeyID: kid, Use: "sig"})}
}

func jwksJSON(t testing.TB, keys ...jose.JSONWebKey) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": append([]jose.JSONWebKey{}, keys...)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s testSigner) sign(t testing.TB, card []byte, jku string) []byte {
	t.Helper()
	out, err := signature.Sign(card, s.key, signature.SignOptions{KeyID: s.kid, JKU: jku})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newJWKS(t testing.TB, f *Fetcher, o JWKSOptions) *JWKS {
	t.Helper()
	o.AllowHTTP = true // httptest servers are http
	j, err := NewJWKS(f, o)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func kids(keys []signature.Key) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.JWK.KeyID)
	}
	return out
}

func TestJWKSLookup(t *testing.T) {
	a, b := newTestSigner(t, "a"), newTestSigner(t, "b")
	var both map[string][]json.RawMessage
	_ = json.Unmarshal(a.jwks, &both)
	var bk map[string][]json.RawMessage
	_ = json.Unmarshal(b.jwks, &bk)
	body, _ := json.Marshal(map[string]any{"keys": append(both["keys"], bk["keys"]...)})
	srv := newJWKSServer(t, body, "max-age=600")
	j := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{})
	ctx := context.Background()

	keys, err := j.Lookup(ctx, "b", srv.url())
	if err != nil || len(keys) != 1 || keys[0].JWK.KeyID != "b" || keys[0].Thumbprint == "" {
		t.Fatalf("Lookup(b) = %v, %v", kids(keys), err)
	}
	if keys, err := j.Lookup(ctx, "a", srv.url()); err != nil || len(keys) != 1 {
		t.Fatalf("Lookup(a) = %v, %v", kids(keys), err)
	}
	// A kid the fresh set lacks: the set is younger than MinTTL, no refetch.
	if keys, err := j.Lookup(ctx, "c", srv.url()); err != nil || keys != nil {
		t.Fatalf("Lookup(c) = %v, %v", kids(keys), err)
	}
	if keys, err := j.Lookup(ctx, "a", ""); err != nil || keys != nil {
		t.Fatalf("Lookup without jku = %v, %v", kids(keys), err)
	}
	// Spellings of one URL share the entry.
	if _, err := j.Lookup(ctx, "a", strings.Replace(srv.url(), "http://", "HTTP://", 1)); err != nil {
		t.Fatal(err)
	}
	if n := srv.requests.Load(); n != 1 || j.Len() != 1 {
		t.Errorf("%d requests, %d entries; want 1 and 1", n, j.Len())
	}
}

func TestJWKSHeaders(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = w.Write([]byte(`{"keys":[]}`))
	}))
	defer srv.Close()
	j := newJWKS(t, newFetcher(t, testOptions(nil)), JWKSOptions{})
	if _, err := j.Get(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if got.Get("Accept") != DefaultJWKSAccept || got.Get("User-Agent") != DefaultUserAgent || got.Get("A2A-Version") != "" {
		t.Errorf("request headers = %v", got)
	}
}

// TestJWKSCacheControl: a set is used for its max-age (minus Age), clamped to
// [MinTTL, MaxTTL], DefaultTTL without max-age.
func TestJWKSCacheControl(t *testing.T) {
	s := newTestSigner(t, "k")
	tests := []struct {
		name    string
		cc, age string
		ttl     time.Duration
	}{
		{"max-age", "max-age=600", "", 10 * time.Minute},
		{"max-age minus Age", "public, max-age=600", "100", 500 * time.Second},
		{"no-cache is MinTTL", "no-cache", "", DefaultJWKSMinTTL},
		{"max-age=0 is MinTTL", "max-age=0", "", DefaultJWKSMinTTL},
		{"below MinTTL", "max-age=5", "", DefaultJWKSMinTTL},
		{"above MaxTTL", "max-age=86400", "", DefaultJWKSMaxTTL},
		{"none", "", "", DefaultJWKSDefaultTTL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if tc.cc != "" {
					w.Header().Set("Cache-Control", tc.cc)
				}
				if tc.age != "" {
					w.Header().Set("Age", tc.age)
				}
				_, _ = w.Write(s.jwks)
			}))
			defer srv.Close()
			clk := newClock()
			j := newJWKS(t, newFetcher(t, testOptions(clk)), JWKSOptions{})
			lookup := func() {
				t.Helper()
				if keys, err := j.Lookup(context.Background(), "k", srv.URL); err != nil || len(keys) != 1 {
					t.Fatalf("Lookup = %v, %v", kids(keys), err)
				}
			}
			lookup()
			clk.Advance(tc.ttl - time.Second)
			lookup()
			if n := requests.Load(); n != 1 {
				t.Fatalf("%d requests within the TTL %v, want 1", n, tc.ttl)
			}
			clk.Advance(time.Second)
			lookup()
			if n := requests.Load(); n != 2 {
				t.Fatalf("%d requests once the TTL %v passed, want 2", n, tc.ttl)
			}
		})
	}
}

// TestJWKSRotation: a kid missing from a set older than MinTTL makes Lookup
// fetch the set again, so a new key is found before the set expires.
func TestJWKSRotation(t *testing.T) {
	old, next := newTestSigner(t, "2025"), newTestSigner(t, "2026")
	srv := newJWKSServer(t, old.jwks, "max-age=3600")
	clk := newClock()
	j := newJWKS(t, newFetcher(t, testOptions(clk)), JWKSOptions{})
	ctx := context.Background()
	if keys, _ := j.Lookup(ctx, "2025", srv.url()); len(keys) != 1 {
		t.Fatal("old key not found")
	}
	srv.set(next.jwks, "max-age=3600")
	if keys, err := j.Lookup(ctx, "2026", srv.url()); keys != nil || err != nil || srv.requests.Load() != 1 {
		t.Fatalf("Lookup(new kid) within MinTTL = %v, %v after %d requests; want no key, no refetch", kids(keys), err, srv.requests.Load())
	}
	clk.Advance(DefaultJWKSMinTTL)
	if keys, err := j.Lookup(ctx, "2026", srv.url()); len(keys) != 1 || err != nil || srv.requests.Load() != 2 {
		t.Fatalf("Lookup(new kid) after MinTTL = %v, %v after %d requests; want the new key", kids(keys), err, srv.requests.Load())
	}
	// The old kid is gone from the set now cached.
	if keys, _ := j.Lookup(ctx, "2025", srv.url()); keys != nil {
		t.Errorf("old key still found: %v", kids(keys))
	}
}

// TestJWKSFailure: a failure is remembered for FailureTTL, then retried.
func TestJWKSFailure(t *testing.T) {
	var requests atomic.Int64
	var ok atomic.Bool
	s := newTestSigner(t, "k")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if !ok.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(s.jwks)
	}))
	defer srv.Close()
	clk := newClock()
	j := newJWKS(t, newFetcher(t, testOptions(clk)), JWKSOptions{FailureTTL: 10 * time.Second})
	for range 3 {
		_, err := j.Lookup(context.Background(), "k", srv.URL)
		if fe := fetchErr(t, err, ReasonStatus); fe.Status != http.StatusServiceUnavailable {
			t.Errorf("Status = %d", fe.Status)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests for 3 lookups within FailureTTL, want 1", n)
	}
	ok.Store(true)
	clk.Advance(10 * time.Second)
	if keys, err := j.Lookup(context.Background(), "k", srv.URL); len(keys) != 1 || err != nil {
		t.Errorf("Lookup after FailureTTL = %v, %v", kids(keys), err)
	}
}

// TestJWKSCoalesce: concurrent lookups of one URL share one fetch; a caller
// that leaves does not cancel the others.
func TestJWKSCoalesce(t *testing.T) {
	s := newTestSigner(t, "k")
	srv := newJWKSServer(t, s.jwks, "max-age=60")
	release := srv.hold()
	j := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{})

	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			keys, err := j.Lookup(context.Background(), "k", srv.url())
			if err == nil && len(keys) != 1 {
				err = errors.New("no key")
			}
			errs <- err
		}()
	}
	// Wait for the flight (a generous bound: the goroutines may start late
	// on a busy machine, and without a flight the rest tests nothing).
	deadline := time.Now().Add(time.Minute)
	for srv.requests.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if srv.requests.Load() == 0 {
		t.Fatal("no lookup reached the JWKS server within a minute")
	}
	// A flight is in progress: this caller joins it, then leaves.
	leaver, leave := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() { _, err := j.Lookup(leaver, "k", srv.url()); left <- err }()
	time.Sleep(20 * time.Millisecond) // let everyone queue on the flight
	leave()
	if err := <-left; err == nil {
		t.Error("a caller whose context was canceled got keys")
	}
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := srv.requests.Load(); got != 1 {
		t.Errorf("%d requests for %d concurrent lookups, want 1", got, n+1)
	}
}

// TestJWKSCanceledLeader: when the caller whose lookup is fetching leaves, its
// fetch is not remembered as a failure; the next lookup fetches.
func TestJWKSCanceledLeader(t *testing.T) {
	s := newTestSigner(t, "k")
	srv := newJWKSServer(t, s.jwks, "max-age=60")
	release := srv.hold()
	j := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := j.Lookup(ctx, "k", srv.url()); done <- err }()
	for srv.requests.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	fetchErr(t, <-done, ReasonCanceled)
	release()
	if keys, err := j.Lookup(context.Background(), "k", srv.url()); len(keys) != 1 || err != nil {
		t.Errorf("Lookup after a canceled fetch = %v, %v", kids(keys), err)
	}
}

func TestJWKSBounded(t *testing.T) {
	s := newTestSigner(t, "k")
	j := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{MaxEntries: 2})
	for range 3 {
		srv := newJWKSServer(t, s.jwks, "max-age=600")
		if _, err := j.Lookup(context.Background(), "k", srv.url()); err != nil {
			t.Fatal(err)
		}
	}
	if j.Len() != 2 {
		t.Errorf("Len = %d, want 2", j.Len())
	}
}

// TestJWKSMaxBytes: the jku key sets cached are bounded in bytes (each
// counted at jwksEntrySize of its body), least recently used evicted first,
// one larger than the bound not kept; the operator's set (URL) is kept
// apart and survives any churn of jku URLs.
func TestJWKSMaxBytes(t *testing.T) {
	s := newTestSigner(t, "k")
	var set map[string]any
	if err := json.Unmarshal(s.jwks, &set); err != nil {
		t.Fatal(err)
	}
	set["pad"] = strings.Repeat("p", 100<<10) // a key set of about 100 KiB
	big, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	var requests sync.Map // path → *atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := requests.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		w.Header().Set("Cache-Control", "max-age=600")
		w.Write(big)
	}))
	t.Cleanup(srv.Close)
	const maxBytes = 1 << 20
	j := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{MaxBytes: maxBytes})
	ctx := context.Background()
	operator := j.URL(srv.URL + "/operator.json")
	if keys, err := operator.Lookup(ctx, "k", ""); err != nil || len(keys) != 1 {
		t.Fatalf("operator Lookup = %v, %v", keys, err)
	}
	per := jwksEntrySize(len(big))
	for i := range 40 {
		if keys, err := j.Lookup(ctx, "k", fmt.Sprintf("%s/jku-%d.json", srv.URL, i)); err != nil || len(keys) != 1 {
			t.Fatalf("jku %d: Lookup = %v, %v", i, keys, err)
		}
		if b := j.Bytes(); b > maxBytes {
			t.Fatalf("after %d jku sets: %d bytes cached, bound %d", i+1, b, maxBytes)
		}
	}
	if got, want := j.Len(), int(maxBytes/per)+1; got != want {
		t.Errorf("Len = %d, want %d jku sets of %d bytes within %d, and the operator's", got, want, per, maxBytes)
	}
	if _, err := operator.Lookup(ctx, "k", ""); err != nil {
		t.Fatal(err)
	}
	if n, _ := requests.Load("/operator.json"); n.(*atomic.Int64).Load() != 1 {
		t.Errorf("the operator's key set was fetched %d times, want once: jku churn evicted it", n.(*atomic.Int64).Load())
	}
	if _, err := j.Lookup(ctx, "k", srv.URL+"/jku-0.json"); err != nil {
		t.Fatal(err)
	}
	if n, _ := requests.Load("/jku-0.json"); n.(*atomic.Int64).Load() != 2 {
		t.Errorf("the least recently used jku set was fetched %d times, want again after its eviction", n.(*atomic.Int64).Load())
	}
	tiny := newJWKS(t, newFetcher(t, testOptions(newClock())), JWKSOptions{MaxBytes: per - 1})
	if _, err := tiny.Lookup(ctx, "k", srv.URL+"/x.json"); err != nil || tiny.Len() != 0 || tiny.Bytes() != 0 {
		t.Errorf("a set larger than MaxBytes: %v, Len %d, Bytes %d; want used, not kept", err, tiny.Len(), tiny.Bytes())
	}
}

// TestJWKSPolicy: an http jku is refused before any request unless
// AllowHTTP; URL takes the operator's http set; bad options are refused.
func TestJWKSPolicy(t *testing.T) {
	s := newTestSigner(t, "k")
	srv := newJWKSServer(t, s.jwks, "")
	f := newFetcher(t, testOptions(nil))
	strict, err := NewJWKS(f, JWKSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = strict.Lookup(context.Background(), "k", srv.url())
	fetchErr(t, err, ReasonInvalidURL)
	for _, jku := range []string{"file:///etc/jwks.json", "ftp://x/jwks", "//host/jwks", "not a url"} {
		_, err := strict.Lookup(context.Background(), "k", jku)
		fetchErr(t, err, ReasonInvalidURL)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("%d requests for refused jku URLs", n)
	}
	if keys, err := strict.URL(srv.url()).Lookup(context.Background(), "k", "https://ignored.example/jwks"); len(keys) != 1 || err != nil {
		t.Errorf("URL(http).Lookup = %v, %v", kids(keys), err)
	}
	for _, o := range []JWKSOptions{{MinTTL: time.Hour, MaxTTL: time.Minute}, {MaxEntries: -1}, {MaxBodyBytes: 2 << 20}, {FailureTTL: -1}} {
		if _, err := NewJWKS(f, o); err == nil {
			t.Errorf("NewJWKS(%+v) accepted", o)
		}
	}
	if _, err := NewJWKS(nil, JWKSOptions{}); err == nil {
		t.Error("NewJWKS(nil) accepted")
	}
}

// TestHostileJWKS: key set endpoints that are slow, huge, not key sets or
// point at private addresses are contained like hostile cards: a typed
// *FetchError within the total timeout.
func TestHostileJWKS(t *testing.T) {
	deep := `{"keys":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		raw        func(c net.Conn)
		strict     bool // no loopback in Allow: the address itself is refused
		want       Reason
		wantStatus int
		wantErr    error
	}{
		{name: "slow headers", handler: hang, want: ReasonTimeout},
		{name: "slow body (trickle)", handler: func(w http.ResponseWriter, r *http.Request) {
			trickle(w, r, 20*time.Millisecond, []byte(`{"keys":[]}`))
		}, want: ReasonTimeout, wantStatus: 200},
		{name: "huge chunked body", handler: hugeChunked, want: ReasonTooLarge, wantStatus: 200},
		{name: "huge declared Content-Length", handler: hugeContentLength, want: ReasonTooLarge, wantStatus: 200},
		{name: "gzip bomb", handler: gzipBomb(), want: ReasonTooLarge, wantStatus: 200},
		{name: "Content-Length lies high, connection closes", raw: func(c net.Conn) {
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n{\"keys\":"))
		}, want: ReasonConnect, wantStatus: 200},
		{name: "not JSON", handler: serveBody(`<html>keys</html>`), want: ReasonInvalidJSON, wantStatus: 200},
		{name: "JSON, not a key set", handler: serveBody(`{"name":"an agent card"}`), want: ReasonNotACard, wantStatus: 200, wantErr: signature.ErrInvalidJWKS},
		{name: "JSON array", handler: serveBody(`[{"kty":"EC"}]`), want: ReasonNotACard, wantStatus: 200, wantErr: signature.ErrInvalidJWKS},
		{name: "duplicate keys", handler: serveBody(`{"keys":[],"keys":[]}`), want: ReasonDuplicateKeys, wantStatus: 200},
		{name: "deep nesting", handler: serveBody(deep), want: ReasonTooDeep, wantStatus: 200},
		{name: "invalid UTF-8", handler: serveBody("{\"keys\":[],\"x\":\"caf\xe9\"}"), want: ReasonInvalidUTF8, wantStatus: 200},
		{name: "404", handler: http.NotFound, want: ReasonStatus, wantStatus: 404},
		{name: "redirect loop", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
		}, want: ReasonTooManyRedirects},
		{name: "redirect to cloud metadata", handler: redirectTo("http://169.254.169.254/latest/meta-data/", http.StatusFound), want: ReasonRefusedAddress},
		{name: "redirect to a private address", handler: redirectTo("http://10.0.0.1:8080/jwks.json", http.StatusTemporaryRedirect), want: ReasonRefusedAddress},
		{name: "redirect to file:", handler: redirectTo("file:///etc/passwd", http.StatusFound), want: ReasonRedirectRefused},
		{name: "private address", handler: serveBody(`{"keys":[]}`), strict: true, want: ReasonRefusedAddress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := serveHostile(t, tc.handler, tc.raw, "/jwks.json")
			o := hostileOptions()
			if tc.strict {
				o.Allow = nil
			}
			j := newJWKS(t, newFetcher(t, o), JWKSOptions{MaxBodyBytes: 64 << 10})
			start := time.Now()
			keys, err := j.Lookup(context.Background(), "k", url)
			elapsed := time.Since(start)
			fe := fetchErr(t, err, tc.want)
			if fe.Status != tc.wantStatus || keys != nil {
				t.Errorf("Status = %d (want %d), keys %v", fe.Status, tc.wantStatus, kids(keys))
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tc.wantErr)
			}
			if limit := o.TotalTimeout + slack; elapsed > limit {
				t.Errorf("took %v, want at most %v", elapsed, limit)
			}
			// Remembered: the next lookup fails the same way at once.
			start = time.Now()
			_, err = j.Lookup(context.Background(), "k", url)
			fetchErr(t, err, tc.want)
			if el := time.Since(start); el > 100*time.Millisecond {
				t.Errorf("second lookup took %v: the failure was not remembered", el)
			}
		})
	}
}

// TestJWKSVerify wires the cache into signature.Verify: a card whose jku
// names the key set verifies with the key marked as from jku; a key set that
// cannot be fetched leaves the signature unverified, never invalid; a key
// the operator trusts answers for its kid.
func TestJWKSVerify(t *testing.T) {
	s := newTestSigner(t, "agent-2026")
	srv := newJWKSServer(t, s.jwks, "max-age=300")
	card := []byte(`{"name":"Ledger Clerk","version":"1.4.0","skills":[{"id":"s","name":"S","description":"d","tags":["t"]}]}`)
	signed := s.sign(t, card, srv.url())
	f := newFetcher(t, testOptions(newClock()))
	j := newJWKS(t, f, JWKSOptions{})
	ctx := context.Background()

	verify := func(raw []byte, keys signature.Keys) signature.Result {
		t.Helper()
		res, err := signature.Verify(ctx, raw, keys)
		if err != nil || len(res) != 1 {
			t.Fatalf("Verify = %+v, %v", res, err)
		}
		return res[0]
	}
	if r := verify(signed, signature.Sources{JKU: j}); !r.Verified || r.Source != signature.SourceJKU || r.JKU != srv.url() {
		t.Errorf("Verify via jku = %+v", r)
	}
	tampered := bytes.Replace(signed, []byte(`"1.4.0"`), []byte(`"1.4.1"`), 1)
	if r := verify(tampered, signature.Sources{JKU: j}); r.Reason != signature.ReasonInvalidSignature {
		t.Errorf("Verify(tampered) = %+v", r)
	}

	down := newTestSigner(t, "agent-down")
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer dead.Close()
	if r := verify(down.sign(t, card, dead.URL+"/jwks.json"), signature.Sources{JKU: j}); r.Verified || r.Reason != signature.ReasonKeysUnavailable || !strings.Contains(r.Detail, "502") {
		t.Errorf("Verify with the key set down = %+v; want keys-unavailable", r)
	}

	other := newTestSigner(t, "agent-2026") // the same kid, another key, trusted
	trusted := signature.Sources{Trusted: j.URL(newJWKSServer(t, other.jwks, "").url()), JKU: j}
	if r := verify(signed, trusted); r.Verified || r.Source != signature.SourceTrusted || r.Reason != signature.ReasonInvalidSignature {
		t.Errorf("Verify with another trusted key for the kid = %+v; want invalid against the trusted key", r)
	}
}

// BenchmarkJWKSVerify verifies one ES256-signed card whose jku names an
// httptest key set: cold (a new cache: the key set fetch is included) and
// with the key set cached.
func BenchmarkJWKSVerify(b *testing.B) {
	s := newTestSigner(b, "bench")
	srv := newJWKSServer(b, s.jwks, "max-age=3600")
	card := []byte(`{"name":"Ledger Clerk","description":"Reads invoices.","version":"1.4.0","capabilities":{"streaming":true},
		"supportedInterfaces":[{"url":"https://agent.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
		"skills":[{"id":"s","name":"S","description":"d","tags":["t"]}]}`)
	signed := s.sign(b, card, srv.url())
	f, err := New(Options{Allow: loopback})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	ctx := context.Background()
	run := func(b *testing.B, keys func() signature.Keys) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := signature.Verify(ctx, signed, keys())
			if err != nil || !res[0].Verified {
				b.Fatalf("Verify = %+v, %v", res, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/verify")
	}
	b.Run("cold", func(b *testing.B) {
		before := srv.requests.Load()
		run(b, func() signature.Keys {
			j, _ := NewJWKS(f, JWKSOptions{AllowHTTP: true})
			return signature.Sources{JKU: j}
		})
		b.ReportMetric(float64(srv.requests.Load()-before)/float64(b.N), "fetches/verify")
	})
	b.Run("cached", func(b *testing.B) {
		j, _ := NewJWKS(f, JWKSOptions{AllowHTTP: true})
		keys := signature.Sources{JKU: j}
		before := srv.requests.Load()
		run(b, func() signature.Keys { return keys })
		b.ReportMetric(float64(srv.requests.Load()-before)/float64(b.N), "fetches/verify")
	})
}
