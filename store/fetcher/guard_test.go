package fetcher

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestGuardCheck(t *testing.T) {
	p := netip.MustParsePrefix
	tests := []struct {
		addr  string
		allow []netip.Prefix
		ok    bool
	}{
		{addr: "8.8.8.8", ok: true},
		{addr: "93.184.215.14", ok: true},
		{addr: "2606:4700:4700::1111", ok: true},
		{addr: "127.0.0.1"},
		{addr: "127.255.0.9"},
		{addr: "::1"},
		{addr: "::ffff:127.0.0.1"}, // IPv4-mapped loopback
		{addr: "::ffff:10.0.0.1"},
		{addr: "10.1.2.3"},
		{addr: "172.16.0.1"},
		{addr: "172.31.255.255"},
		{addr: "192.168.1.1"},
		{addr: "169.254.169.254"},
		{addr: "169.254.170.2"},
		{addr: "169.254.1.1"},
		{addr: "100.64.0.1"},
		{addr: "100.100.100.200"},
		{addr: "0.0.0.0"},
		{addr: "::"},
		{addr: "224.0.0.1"},
		{addr: "255.255.255.255"},
		{addr: "fc00::1"},
		{addr: "fd00:ec2::254"},
		{addr: "fe80::1"},
		{addr: "ff02::1"},
		{addr: "64:ff9b::a9fe:a9fe"}, // NAT64 of 169.254.169.254
		{addr: "64:ff9b::808:808", ok: true},
		{addr: "2002:0a00:0001::1"}, // 6to4 of 10.0.0.1
		{addr: "127.0.0.1", allow: []netip.Prefix{p("127.0.0.0/8")}, ok: true},
		{addr: "::1", allow: []netip.Prefix{p("127.0.0.0/8")}},
		{addr: "10.9.9.9", allow: []netip.Prefix{p("10.0.0.0/8")}, ok: true},
		{addr: "169.254.169.254", allow: []netip.Prefix{p("169.254.0.0/16")}},
		{addr: "169.254.169.254", allow: []netip.Prefix{p("0.0.0.0/0")}},
		{addr: "169.254.169.254", allow: []netip.Prefix{p("169.254.169.254/32")}, ok: true},
		{addr: "169.254.1.1", allow: []netip.Prefix{p("169.254.0.0/16")}, ok: true},
	}
	for _, tc := range tests {
		err := guard{allow: tc.allow}.check(netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.ok {
			t.Errorf("check(%s) with allow %v = %v, want ok=%t", tc.addr, tc.allow, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ReasonRefusedAddress) {
			t.Errorf("check(%s) = %v, does not match ReasonRefusedAddress", tc.addr, err)
		}
	}
}

func TestGuardControlAddresses(t *testing.T) {
	g := guard{}
	for _, a := range []string{"127.0.0.1:80", "[::1]:443", "[fe80::1%eth0]:80", "garbage"} {
		if err := g.control("tcp", a, nil); err == nil {
			t.Errorf("control(%q) = nil, want refused", a)
		}
	}
	if err := g.control("tcp", "8.8.8.8:443", nil); err != nil {
		t.Errorf("control(8.8.8.8:443) = %v", err)
	}
}

// The default guard refuses the loopback test server itself, by address and by
// a name that resolves to it.
func TestDefaultGuardRefusesLoopback(t *testing.T) {
	srv := httptest.NewServer(serveBody(string(cardJSON("1", true))))
	defer srv.Close()
	o := Options{TotalTimeout: 5 * time.Second, ConnectTimeout: 2 * time.Second}
	f := newFetcher(t, o)
	ctx := context.Background()

	_, err := f.Observe(ctx, srv.URL+"/card", false)
	fetchErr(t, err, ReasonRefusedAddress)

	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, err = f.Fetch(ctx, Request{URL: "http://localhost:" + port + "/card"})
	fetchErr(t, err, ReasonRefusedAddress)

	if ln, lerr := net.Listen("tcp", "[::1]:0"); lerr == nil {
		v6 := &httptest.Server{Listener: ln, Config: &http.Server{Handler: serveBody(string(cardJSON("1", true)))}}
		v6.Start()
		defer v6.Close()
		_, err = f.Fetch(ctx, Request{URL: v6.URL + "/card"})
		fetchErr(t, err, ReasonRefusedAddress)
	} else {
		t.Logf("no IPv6 loopback (%v): [::1] covered by TestGuardCheck only", lerr)
	}

	for _, u := range []string{
		"http://10.0.0.1/card",
		"http://192.168.1.1/.well-known/agent-card.json",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00:ec2::254]/",
		"http://100.100.100.200/",
		"http://0.0.0.0:" + port + "/",
	} {
		_, err := f.Fetch(ctx, Request{URL: u})
		fe := fetchErr(t, err, ReasonRefusedAddress)
		if !strings.Contains(fe.Error(), "refused") {
			t.Errorf("%s: error text %q", u, fe.Error())
		}
		assertRefusedByDialer(t, err, "")
	}
}

// assertRefusedByDialer checks that err comes from the guard in the dialer's
// Control hook (so connect(2) never ran), for addr when addr is not "".
func assertRefusedByDialer(t *testing.T, err error, addr string) {
	t.Helper()
	var re *refusedError
	if !errors.As(err, &re) {
		t.Fatalf("%v: not refused by the dial guard", err)
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("%v: refusal is not a dial error", err)
	}
	if addr != "" && (op == nil || op.Addr == nil || op.Addr.String() != addr) {
		t.Errorf("refused dial of %v, want %s", op.Addr, addr)
	}
}

// hostileOptions bound every fetch tightly so hostile agents are cut short fast.
func hostileOptions() Options {
	o := testOptions(nil)
	o.ConnectTimeout = 200 * time.Millisecond
	o.TotalTimeout = 500 * time.Millisecond
	o.MaxBodyBytes = 64 << 10
	return o
}

// slack is what a bounded failure may take beyond its configured timeout. It
// is generous because tests share loaded machines (and run under -race); the
// hostile handlers hang until the client leaves, so an unbounded fetch would
// still show.
const slack = 4 * time.Second

func trickle(w http.ResponseWriter, r *http.Request, every time.Duration, b []byte) {
	fl := w.(http.Flusher)
	for i := 0; ; i++ {
		if _, err := w.Write(b[i%len(b) : i%len(b)+1]); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-time.After(every):
		case <-r.Context().Done():
			return
		}
	}
}

// rawServer serves every connection with a raw HTTP response written by fn.
func rawServer(t *testing.T, fn func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = http.ReadRequest(bufio.NewReader(c))
				_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				fn(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/card"
}

// serveHostile starts the hostile endpoint of a test case, raw (a TCP server
// writing its own response) or else handler, and returns the URL to fetch
// (path on it).
func serveHostile(t *testing.T, handler http.HandlerFunc, raw func(c net.Conn), path string) string {
	t.Helper()
	if raw != nil {
		return rawServer(t, raw)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv.URL + path
}

// Hostile handlers that any endpoint the Fetcher reads (cards, key sets)
// may turn out to be.

// hang never answers: it holds the request until the client leaves.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// hugeChunked streams up to 4 MiB without a Content-Length.
func hugeChunked(w http.ResponseWriter, r *http.Request) {
	chunk := bytes.Repeat([]byte(" "), 32<<10)
	for range 128 { // 4 MiB at most
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// hugeContentLength declares 100 MiB and sends one byte.
func hugeContentLength(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "104857600")
	w.WriteHeader(200)
	_, _ = w.Write([]byte("{"))
}

// gzipBomb serves 8 MiB of zeros (128 times the hostile MaxBodyBytes) as
// about 8 KiB of gzip.
func gzipBomb() http.HandlerFunc {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	chunk := make([]byte, 1<<20)
	for range 8 {
		_, _ = zw.Write(chunk)
	}
	_ = zw.Close()
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(b.Bytes())
	}
}

// redirectTo answers every request with a redirect to url.
func redirectTo(url string, code int) http.HandlerFunc {
	return http.RedirectHandler(url, code).ServeHTTP
}

func TestHostileAgents(t *testing.T) {
	deep := `{"name":"deep","x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`

	tests := []struct {
		name       string
		handler    http.HandlerFunc
		raw        func(c net.Conn) // instead of handler: a raw TCP server
		want       Reason
		wantStatus int
	}{
		{
			name:    "slow headers",
			handler: hang,
			want:    ReasonTimeout,
		},
		{
			name: "slow body (trickle)",
			handler: func(w http.ResponseWriter, r *http.Request) {
				trickle(w, r, 20*time.Millisecond, cardJSON("1", true))
			},
			want:       ReasonTimeout,
			wantStatus: 200,
		},
		{
			name:       "huge chunked body",
			handler:    hugeChunked,
			want:       ReasonTooLarge,
			wantStatus: 200,
		},
		{
			name:       "huge declared Content-Length",
			handler:    hugeContentLength,
			want:       ReasonTooLarge,
			wantStatus: 200,
		},
		{
			name: "Content-Length lies low, body streams on",
			raw: func(c net.Conn) {
				_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 16\r\nConnection: close\r\n\r\n")
				chunk := bytes.Repeat([]byte(`{"name":"x","a":`), 4096)
				for range 64 { // 4 MiB at most
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			},
			want:       ReasonInvalidJSON, // the declared 16 bytes are read, no more
			wantStatus: 200,
		},
		{
			name: "Content-Length lies high, connection closes",
			raw: func(c net.Conn) {
				_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n{\"name\":")
			},
			want:       ReasonConnect,
			wantStatus: 200,
		},
		{
			name:       "gzip bomb",
			handler:    gzipBomb(),
			want:       ReasonTooLarge,
			wantStatus: 200,
		},
		{
			name: "redirect loop",
			handler: func(w http.ResponseWriter, r *http.Request) {
				next := "/a"
				if r.URL.Path == "/a" {
					next = "/b"
				}
				http.Redirect(w, r, next, http.StatusFound)
			},
			want: ReasonTooManyRedirects,
		},
		{
			name:    "redirect to cloud metadata",
			handler: redirectTo("http://169.254.169.254/latest/meta-data/iam/", http.StatusFound),
			want:    ReasonRefusedAddress,
		},
		{
			name:    "redirect to IPv6 cloud metadata",
			handler: redirectTo("http://[fd00:ec2::254]/latest/meta-data/", http.StatusMovedPermanently),
			want:    ReasonRefusedAddress,
		},
		{
			name:    "redirect to a private address",
			handler: redirectTo("http://10.0.0.1:8080/admin", http.StatusTemporaryRedirect),
			want:    ReasonRefusedAddress,
		},
		{
			name:    "redirect to file:",
			handler: redirectTo("file:///etc/passwd", http.StatusFound),
			want:    ReasonRedirectRefused,
		},
		{
			name:       "invalid JSON",
			handler:    serveBody(`{"name": "x", `),
			want:       ReasonInvalidJSON,
			wantStatus: 200,
		},
		{
			name:       "deep nesting",
			handler:    serveBody(deep),
			want:       ReasonTooDeep,
			wantStatus: 200,
		},
		{
			name:       "duplicate keys",
			handler:    serveBody(`{"name":"a","version":"1","name":"b"}`),
			want:       ReasonDuplicateKeys,
			wantStatus: 200,
		},
		{
			name:       "invalid UTF-8",
			handler:    serveBody("{\"name\":\"caf\xe9\"}"),
			want:       ReasonInvalidUTF8,
			wantStatus: 200,
		},
		{
			name:       "JSON but not an object",
			handler:    serveBody(`[{"name":"a"}]`),
			want:       ReasonNotACard,
			wantStatus: 200,
		},
		{
			name: "500",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "boom", http.StatusInternalServerError)
			},
			want:       ReasonStatus,
			wantStatus: 500,
		},
		{
			name: "304 to an unconditional request",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNotModified)
			},
			want:       ReasonStatus,
			wantStatus: 304,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := serveHostile(t, tc.handler, tc.raw, "/card")
			o := hostileOptions()
			f := newFetcher(t, o)
			start := time.Now()
			obs, err := f.Observe(context.Background(), url, false)
			elapsed := time.Since(start)
			fe := fetchErr(t, err, tc.want)
			if fe.Status != tc.wantStatus {
				t.Errorf("Status = %d, want %d", fe.Status, tc.wantStatus)
			}
			if fe.URL != url || obs.Card != nil {
				t.Errorf("URL = %q (want %q), Card = %v", fe.URL, url, obs.Card)
			}
			if limit := o.TotalTimeout + slack; elapsed > limit {
				t.Errorf("took %v, want at most %v", elapsed, limit)
			}
		})
	}
}

func serveBody(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}

// The metadata redirect is refused by the dialer's Control hook, which runs
// after the socket is made and before connect(2): no packet leaves.
func TestRedirectToMetadataNeverConnects(t *testing.T) {
	srv := httptest.NewServer(redirectTo("http://169.254.169.254/latest/meta-data/", http.StatusFound))
	defer srv.Close()
	f := newFetcher(t, hostileOptions())
	_, err := f.Fetch(context.Background(), Request{URL: srv.URL})
	fetchErr(t, err, ReasonRefusedAddress)
	assertRefusedByDialer(t, err, "169.254.169.254:80")
}

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(serveBody(string(cardJSON("1", true))))
	defer srv.Close()
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs

	// The reason is under test, not the clock: a handshake on a loaded
	// machine under -race can outlast testOptions' 2 s (then the reason is
	// timeout, not tls).
	unhurried := func() Options {
		o := testOptions(nil)
		o.ConnectTimeout, o.TotalTimeout = 30*time.Second, time.Minute
		return o
	}
	t.Run("unknown CA", func(t *testing.T) {
		f := newFetcher(t, unhurried())
		_, err := f.Fetch(context.Background(), Request{URL: srv.URL})
		fetchErr(t, err, ReasonTLS)
	})
	t.Run("trusted test CA", func(t *testing.T) {
		o := unhurried()
		o.TLSConfig = &tls.Config{RootCAs: roots}
		f := newFetcher(t, o)
		obs, err := f.Fetch(context.Background(), Request{URL: srv.URL})
		if err != nil || obs.Card == nil {
			t.Fatalf("Fetch: %v", err)
		}
	})
	t.Run("https to http downgrade", func(t *testing.T) {
		plain := httptest.NewServer(serveBody(string(cardJSON("1", true))))
		defer plain.Close()
		redir := httptest.NewTLSServer(http.RedirectHandler(plain.URL, http.StatusFound))
		defer redir.Close()
		o := unhurried()
		o.TLSConfig = &tls.Config{RootCAs: redir.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
		f := newFetcher(t, o)
		_, err := f.Fetch(context.Background(), Request{URL: redir.URL})
		fetchErr(t, err, ReasonRedirectRefused)
	})
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	f := newFetcher(t, hostileOptions())
	_, err = f.Fetch(context.Background(), Request{URL: "http://" + addr + "/card"})
	fetchErr(t, err, ReasonConnect)
}

func TestDNSFailure(t *testing.T) {
	f := newFetcher(t, hostileOptions())
	start := time.Now()
	_, err := f.Fetch(context.Background(), Request{URL: "http://no-such-agent.invalid/card"})
	fe, ok := asFetchError(err)
	if !ok {
		t.Fatalf("error %v is not a *FetchError", err)
	}
	// Without a resolver the lookup may time out instead; either is typed.
	if fe.Reason != ReasonDNS && fe.Reason != ReasonTimeout {
		t.Errorf("reason = %q, want dns (or timeout)", fe.Reason)
	}
	if el := time.Since(start); el > hostileOptions().TotalTimeout+slack {
		t.Errorf("took %v", el)
	}
}

func TestInvalidURL(t *testing.T) {
	f := newFetcher(t, hostileOptions())
	for _, u := range []string{"", "not a url", "ftp://agent.example/card", "file:///etc/passwd", "http:///nohost", "http://[::1"} {
		_, err := f.Observe(context.Background(), u, false)
		fetchErr(t, err, ReasonInvalidURL)
	}
}

// TestFetchAgent checks the one-shot look at an agent: the well-known
// resolution and legacy fallback of ObserveAgent, the workers' fixed headers
// and guard, and no lease or memory (every call asks again).
func TestFetchAgent(t *testing.T) {
	var modern, legacy atomic.Int64
	var headers atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers.Store(r.Header.Clone())
		switch r.URL.Path {
		case "/agents/a" + WellKnownPath:
			modern.Add(1)
			http.Error(w, "gone", http.StatusGone)
		case "/agents/a" + LegacyWellKnownPath, "/card.json":
			legacy.Add(1)
			w.Header().Set("ETag", `"v2"`)
			w.Header().Add("Cache-Control", "max-age=60")
			w.Header().Add("Cache-Control", "must-revalidate")
			_, _ = w.Write(cardJSON("0.2", false))
		case "/down" + WellKnownPath:
			http.Error(w, "boom", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := newFetcher(t, testOptions(newClock()))
	ctx := context.Background()

	for i := range 2 {
		obs, err := f.FetchAgent(ctx, srv.URL+"/agents/a/", "")
		if err != nil {
			t.Fatalf("FetchAgent %d: %v", i, err)
		}
		if want := srv.URL + "/agents/a" + LegacyWellKnownPath; obs.CardURL != want || obs.Card == nil || obs.Digest == "" ||
			obs.ETag != `"v2"` || obs.CacheControl != "max-age=60, must-revalidate" || obs.Status != http.StatusOK {
			t.Fatalf("FetchAgent %d = %+v, want the legacy card with its ETag and Cache-Control", i, obs)
		}
	}
	if modern.Load() != 2 || legacy.Load() != 2 {
		t.Errorf("agent-card.json hits %d, agent.json hits %d; want 2 and 2 (nothing remembered)", modern.Load(), legacy.Load())
	}
	h := headers.Load().(http.Header)
	if h.Get("A2A-Version") != DefaultA2AVersion || h.Get("Accept") != DefaultAccept || h.Get("User-Agent") != DefaultUserAgent {
		t.Errorf("headers = %v, want the workers' fixed headers", h)
	}

	// An explicit card URL is fetched as it is.
	if obs, err := f.FetchAgent(ctx, srv.URL, srv.URL+"/card.json"); err != nil || obs.CardURL != srv.URL+"/card.json" {
		t.Errorf("FetchAgent(card URL) = %+v, %v", obs, err)
	}
	// A 500 is not a reason to fall back; nothing anywhere is the first 404.
	fe := fetchErr(t, func() error { _, err := f.FetchAgent(ctx, srv.URL+"/down", ""); return err }(), ReasonStatus)
	if fe.Status != http.StatusInternalServerError {
		t.Errorf("Status = %d, want 500", fe.Status)
	}
	fe = fetchErr(t, func() error { _, err := f.FetchAgent(ctx, srv.URL+"/nowhere", ""); return err }(), ReasonStatus)
	if fe.Status != http.StatusNotFound || fe.URL != srv.URL+"/nowhere"+WellKnownPath {
		t.Errorf("FetchError = %+v, want the 404 of agent-card.json", fe)
	}

	// The guard applies: without Allow, loopback is refused.
	strict := newFetcher(t, Options{})
	_, err := strict.FetchAgent(ctx, srv.URL, "")
	fetchErr(t, err, ReasonRefusedAddress)
}

// A fleet larger than the old idle pool (256 connections) revalidates on
// the connections its first fetches opened: one dial per agent, however
// often it is fetched.
func TestFleetReusesConnections(t *testing.T) {
	const agents, rounds = 300, 3
	var dials atomic.Int64
	body := cardJSON("1.0.0", true)
	urls := make([]string, agents)
	for i := range agents {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				dials.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		urls[i] = srv.URL + WellKnownPath
	}
	f := newFetcher(t, testOptions(nil))
	for r := range rounds {
		for _, u := range urls {
			if _, err := f.Fetch(context.Background(), Request{URL: u}); err != nil {
				t.Fatalf("round %d, %s: %v", r, u, err)
			}
		}
	}
	if n := dials.Load(); n != agents {
		t.Fatalf("%d agents fetched %d times each: %d connections accepted, want %d (one per agent)", agents, rounds, n, agents)
	}
}

// TestUnreachableReasons: the reasons a card.unreachable may carry are every
// Reason but ReasonCanceled, in the same order, each with a description.
// (events' contract test compares the schema and schemas/README.md with this
// list.)
func TestUnreachableReasons(t *testing.T) {
	var want []Reason
	for _, r := range Reasons() {
		if r != ReasonCanceled {
			want = append(want, r)
		}
	}
	got := UnreachableReasons()
	if !slices.Equal(got, want) {
		t.Errorf("UnreachableReasons() = %v, want %v", got, want)
	}
	for _, r := range got {
		if r.Description() == "" || !errors.Is(&FetchError{Reason: r}, r) {
			t.Errorf("reason %q: description %q, matched by its errors: %v; want both", r, r.Description(), errors.Is(&FetchError{Reason: r}, r))
		}
	}
	if d := ReasonCanceled.Description(); d != "" {
		t.Errorf("ReasonCanceled.Description() = %q, want none (never published)", d)
	}
	if d := Reason("no-such-reason").Description(); d != "" {
		t.Errorf("unknown reason's Description() = %q, want none", d)
	}
}
