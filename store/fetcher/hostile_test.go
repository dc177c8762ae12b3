package fetcher

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

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
