package fetcher

import (
	"bufio"
	"bytes"
	"compress/gzip"
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
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// extAgent is an httptest agent with an authenticated extended card: its
// public card at the well-known path names one interface (binding and
// version as given) and declares the extended card; the extended card is
// answered only to requests that carry the token, else 401 (or status).
type extAgent struct {
	srv     *httptest.Server
	binding string
	version string

	mu       sync.Mutex
	token    string
	status   int    // when set, the extended endpoint answers it
	rpcError string // when set, a JSON-RPC error answer (raw JSON)
	redirect string // when set, the extended endpoint redirects here
	extended []byte
	jwks     []byte // when set, served at /jwks.json (no credential needed)
	seen     []extRequest
}

type extRequest struct {
	method, path, auth, a2aVersion, rpcMethod string
	cert                                      bool
}

func newExtAgent(t *testing.T, binding, version string, tlsServer bool) *extAgent {
	a := &extAgent{binding: binding, version: version, token: "Bearer " + testSecret}
	a.extended = cardJSON("2.0.0", true, "summarize", "audit-ledger")
	a.srv = startServer(t, http.HandlerFunc(a.serve), tlsServer)
	return a
}

// startServer starts an httptest server for h, closed with the test: over
// TLS asking for (not requiring) a client certificate when tlsServer is
// set, so that the test sees whether one was presented.
func startServer(t *testing.T, h http.Handler, tlsServer bool) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	if tlsServer {
		srv = httptest.NewUnstartedServer(h)
		srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
		srv.StartTLS()
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

func (a *extAgent) publicCard() []byte {
	path := "/a2a"
	return fmt.Appendf(nil, `{"name":"Test Agent","description":"test","version":"1.0.0",`+
		`"supportedInterfaces":[{"url":"%s%s","protocolBinding":%q,"protocolVersion":%q}],`+
		`"capabilities":{"streaming":true,"extendedAgentCard":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
		`"skills":[{"id":"summarize","name":"s","description":"d","tags":[]}]}`, a.srv.URL, path, a.binding, a.version)
}

func (a *extAgent) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	req := extRequest{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"), a2aVersion: r.Header.Get("A2A-Version"),
		cert: r.TLS != nil && len(r.TLS.PeerCertificates) > 0}
	if r.Method == http.MethodPost {
		var rpc struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &rpc)
		req.rpcMethod = rpc.Method
		if len(rpc.Params) == 0 {
			req.rpcMethod += " (no params)"
		}
	}
	a.seen = append(a.seen, req)
	if r.URL.Path == WellKnownPath {
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write(a.publicCard())
		return
	}
	if r.URL.Path == "/jwks.json" && a.jwks != nil {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(a.jwks)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/a2a") {
		http.NotFound(w, r)
		return
	}
	switch {
	case a.redirect != "":
		http.Redirect(w, r, a.redirect, http.StatusFound)
		return
	case a.status != 0:
		w.WriteHeader(a.status)
		return
	case a.token != "" && req.auth != a.token && !req.cert:
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Cache-Control", "max-age=60")
	if a.binding == "JSONRPC" {
		if a.rpcError != "" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":%s}`, a.rpcError)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, a.extended)
		return
	}
	_, _ = w.Write(a.extended)
}

func (a *extAgent) requests() []extRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]extRequest(nil), a.seen...)
}

func (a *extAgent) set(fn func(a *extAgent)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fn(a)
}

func headerCreds(t *testing.T, origin, value string) *Credentials {
	t.Helper()
	c, err := ParseCredentials(fmt.Appendf(nil, `{%q: {"headers": {"Authorization": %q}}}`, origin, value), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// observeBoth observes the agent's public card, then its extended card.
func observeBoth(t *testing.T, f *Fetcher, a *extAgent) (Observation, Observation, error) {
	t.Helper()
	ctx := context.Background()
	pub, err := f.ObserveAgent(ctx, a.srv.URL, "", false)
	if err != nil {
		t.Fatalf("public card: %v", err)
	}
	ext, err := f.ObserveExtended(ctx, pub, false)
	return pub, ext, err
}

// TestObserveExtendedBindings: each version's method and binding, with the
// credential, and the public card never gets it.
func TestObserveExtendedBindings(t *testing.T) {
	for _, tc := range []struct {
		binding, version, method, path, a2aVersion string
	}{
		{"JSONRPC", "1.0", http.MethodPost, "/a2a", "1.0"},
		{"JSONRPC", "0.3.0", http.MethodPost, "/a2a", "0.3"},
		{"HTTP+JSON", "1.0", http.MethodGet, "/a2a/extendedAgentCard", "1.0"},
		{"HTTP+JSON", "0.3.0", http.MethodGet, "/a2a/v1/card", "0.3"},
	} {
		t.Run(tc.binding+" "+tc.version, func(t *testing.T) {
			a := newExtAgent(t, tc.binding, tc.version, false)
			o := testOptions(nil)
			o.Credentials = headerCreds(t, a.srv.URL, "Bearer "+testSecret)
			f := newFetcher(t, o)
			pub, ext, err := observeBoth(t, f, a)
			if err != nil {
				t.Fatalf("ObserveExtended: %v", err)
			}
			if ext.Digest == pub.Digest || ext.Card.Version != "2.0.0" || ext.Card.Skills[0].ID != "audit-ledger" {
				t.Errorf("extended observation %s version %q, public %s", ext.Digest, ext.Card.Version, pub.Digest)
			}
			if !IsExtendedKey(ext.CardURL) || IsExtendedKey(pub.CardURL) {
				t.Errorf("keys: extended %q, public %q", ext.CardURL, pub.CardURL)
			}
			reqs := a.requests()
			if len(reqs) != 2 {
				t.Fatalf("requests %+v, want the public card and the extended card", reqs)
			}
			if reqs[0].auth != "" {
				t.Errorf("the public card request carried credentials")
			}
			r := reqs[1]
			wantRPC := ""
			if tc.binding == "JSONRPC" {
				wantRPC = MethodExtendedV10
				if tc.a2aVersion == "0.3" {
					wantRPC = MethodExtendedV03
				}
			}
			if r.method != tc.method || r.path != tc.path || r.auth != "Bearer "+testSecret || r.a2aVersion != tc.a2aVersion || r.rpcMethod != wantRPC {
				t.Errorf("extended request %+v, want %s %s A2A-Version %s method %q with the credential", r, tc.method, tc.path, tc.a2aVersion, wantRPC)
			}
			// Leased like any card: within its max-age, no request.
			if _, _, err := observeBoth(t, f, a); err != nil || len(a.requests()) != 2 {
				t.Errorf("second look: %v, %d requests", err, len(a.requests()))
			}
		})
	}
}

func TestObserveExtendedRefusals(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("a redirect target got the credential")
		}
		_, _ = w.Write(cardJSON("9", true))
	}))
	defer other.Close()
	for _, tc := range []struct {
		name   string
		set    func(a *extAgent)
		creds  string
		reason Reason
	}{
		{"wrong token", nil, "Bearer wrong", ReasonUnauthorized},
		{"forbidden", func(a *extAgent) { a.status = http.StatusForbidden }, "", ReasonForbidden},
		{"server error", func(a *extAgent) { a.status = http.StatusBadGateway }, "", ReasonStatus},
		{"not configured", func(a *extAgent) {
			a.rpcError = `{"code":-32007,"message":"Extended card not configured for Bearer ` + testSecret + `"}`
		}, "", ReasonRPCError},
		{"redirect", func(a *extAgent) { a.redirect = other.URL + "/card" }, "", ReasonRedirectRefused},
		{"result and error", func(a *extAgent) { a.rpcError = `{"code":1}, "result": {}` }, "", ReasonNotACard},
		{"result not a card", func(a *extAgent) { a.extended = []byte(`[1]`) }, "", ReasonNotACard},
		{"duplicate keys", func(a *extAgent) { a.extended = []byte(`{"name":"a","name":"b"}`) }, "", ReasonDuplicateKeys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newExtAgent(t, "JSONRPC", "1.0", false)
			if tc.set != nil {
				a.set(tc.set)
			}
			o := testOptions(nil)
			o.Credentials = headerCreds(t, a.srv.URL, "Bearer "+testSecret)
			if tc.creds != "" {
				o.Credentials = headerCreds(t, a.srv.URL, tc.creds)
			}
			f := newFetcher(t, o)
			_, _, err := observeBoth(t, f, a)
			var fe *FetchError
			if !errors.As(err, &fe) || fe.Reason != tc.reason || !errors.Is(err, tc.reason) {
				t.Fatalf("error = %v, want reason %s", err, tc.reason)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Errorf("the error repeats the secret: %v", err)
			}
			if !IsExtendedKey(fe.URL) {
				t.Errorf("error URL %q is not the extended key", fe.URL)
			}
			// Recorded on the lease like a public card's failure: the next
			// look is answered from it, still without the secret.
			_, _, err2 := observeBoth(t, f, a)
			if !errors.As(err2, &fe) || fe.Reason != tc.reason || strings.Contains(err2.Error(), testSecret) {
				t.Errorf("recorded failure = %v", err2)
			}
		})
	}
}

// TestObserveExtendedUnavailable: without a credential for the agent's
// origin, or without an extended card offered on the agent's own origin,
// nothing is asked.
func TestObserveExtendedUnavailable(t *testing.T) {
	a := newExtAgent(t, "JSONRPC", "1.0", false)
	// edit replaces the public card by a copy (its interfaces copied too)
	// for fn to change.
	edit := func(fn func(p *Observation)) func(*Observation) {
		return func(p *Observation) {
			c := *p.Card
			c.Interfaces = slices.Clone(c.Interfaces)
			p.Card = &c
			fn(p)
		}
	}
	for _, tc := range []struct {
		name  string
		creds CredentialSource
		card  func(pub *Observation)
		why   string
	}{
		{"no credentials", nil, nil, "no-credentials"},
		{"another origin's credentials", headerCreds(t, "https://other.example", "Bearer x"), nil, "no-credentials"},
		{"not offered", headerCreds(t, a.srv.URL, "x"), edit(func(p *Observation) {
			p.Card.Capabilities.ExtendedAgentCard = false
		}), "not-offered"},
		{"interface on another origin", headerCreds(t, a.srv.URL, "x"), edit(func(p *Observation) {
			p.Card.Interfaces[0].URL = "https://other.example/a2a"
		}), "no-interface"},
		{"gRPC only", headerCreds(t, a.srv.URL, "x"), edit(func(p *Observation) {
			p.Card.Interfaces[0].ProtocolBinding = "GRPC"
		}), "no-interface"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(nil)
			o.Credentials = tc.creds
			f := newFetcher(t, o)
			before := len(a.requests())
			pub, err := f.ObserveAgent(context.Background(), a.srv.URL, "", false)
			if err != nil {
				t.Fatal(err)
			}
			if tc.card != nil {
				tc.card(&pub)
			}
			_, err = f.ObserveExtended(context.Background(), pub, false)
			var ue *ExtendedUnavailableError
			if !errors.Is(err, ErrExtendedUnavailable) || !errors.As(err, &ue) || ue.Why != tc.why {
				t.Fatalf("error = %v, want unavailable (%s)", err, tc.why)
			}
			for _, r := range a.requests()[before:] {
				if r.path != WellKnownPath {
					t.Errorf("asked %s %s", r.method, r.path)
				}
			}
		})
	}
}

// TestObserveExtendedCertificate: a client certificate is presented on the
// extended card's connections only, never on the public card's.
func TestObserveExtendedCertificate(t *testing.T) {
	a := newExtAgent(t, "HTTP+JSON", "1.0", true)
	a.set(func(a *extAgent) { a.token = "" })
	a.set(func(a *extAgent) { a.token = "required" }) // only the certificate lets it in
	dir := t.TempDir()
	certPath, keyPath, _ := writePEMPair(t, dir, "client")
	credFile := filepath.Join(dir, "creds.json")
	if err := os.WriteFile(credFile, fmt.Appendf(nil, `{%q: {"cert": %q, "key": %q}}`, a.srv.URL, filepath.Base(certPath), filepath.Base(keyPath)), 0o600); err != nil {
		t.Fatal(err)
	}
	cf, err := OpenCredentials(credFile, CredentialsFileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(a.srv.Certificate())
	o := testOptions(nil)
	o.TLSConfig = &tls.Config{RootCAs: pool}
	o.Credentials = cf
	f := newFetcher(t, o)
	_, ext, err := observeBoth(t, f, a)
	if err != nil {
		t.Fatalf("ObserveExtended: %v", err)
	}
	if ext.Card.Version != "2.0.0" {
		t.Errorf("extended card version %q", ext.Card.Version)
	}
	// Another public fetch after the credentialed one: still no certificate.
	if _, err := f.Fetch(context.Background(), Request{URL: a.srv.URL + WellKnownPath}); err != nil {
		t.Fatal(err)
	}
	for _, r := range a.requests() {
		if r.path == WellKnownPath && r.cert {
			t.Errorf("the public card request presented the client certificate")
		}
		if r.path == "/a2a/extendedAgentCard" && !r.cert {
			t.Errorf("the extended card request presented no certificate")
		}
	}
}

func TestExtendedKeyNeverCollides(t *testing.T) {
	e := ExtendedEndpoint{URL: "https://agent.example/a2a/extendedAgentCard", Binding: "HTTP+JSON", Version: "1.0"}
	pub, err := CanonicalURL(e.Key())
	if err != nil {
		t.Fatal(err)
	}
	if pub == e.Key() || IsExtendedKey(pub) {
		t.Errorf("a client cardUrl %q shares the extended key %q", pub, e.Key())
	}
	back, ok := parseExtendedKey(e.Key())
	if !ok || back != e {
		t.Errorf("parseExtendedKey(%q) = %+v, %v", e.Key(), back, ok)
	}
}

// jkuRecorder is a key server on an origin of its own: it serves a JWKS
// and records what every request presented.
type jkuRecorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []extRequest
}

func newJKURecorder(t *testing.T, jwks []byte, tlsServer bool) *jkuRecorder {
	k := &jkuRecorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.seen = append(k.seen, extRequest{method: r.Method, path: r.URL.Path, auth: headerDump(r),
			cert: r.TLS != nil && len(r.TLS.PeerCertificates) > 0})
		k.mu.Unlock()
		_, _ = w.Write(jwks)
	})
	k.srv = startServer(t, h, tlsServer)
	return k
}

func (k *jkuRecorder) requests() []extRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]extRequest(nil), k.seen...)
}

// headerDump is every header of r, names and values, to search for a
// secret whatever header might carry it.
func headerDump(r *http.Request) string {
	var b strings.Builder
	for name, vs := range r.Header {
		fmt.Fprintf(&b, "%s: %s\n", name, strings.Join(vs, ", "))
	}
	return b.String()
}

// TestExtendedJKUNeverGetsCredentials: a signed extended card whose
// signature names a jku — on another origin, and on the agent's own origin
// — is verified with keys fetched from it, and that fetch presents no
// credential at all, neither the header nor the client certificate held
// for the agent's origin: a jku is chosen by whoever wrote the card, and
// credentials are only ever sent to the extended card request itself.
func TestExtendedJKUNeverGetsCredentials(t *testing.T) {
	signer := newTestSigner(t, "ext-key")
	for _, tc := range []struct {
		name string
		cert bool // a client certificate credential (TLS), else a header
		same bool // the jku is on the agent's own origin
	}{
		{name: "header, jku on another origin"},
		{name: "header, jku on the agent's origin", same: true},
		{name: "certificate, jku on another origin", cert: true},
		{name: "certificate, jku on the agent's origin", cert: true, same: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newExtAgent(t, "JSONRPC", "1.0", tc.cert)
			other := newJKURecorder(t, signer.jwks, tc.cert)
			jku := other.srv.URL + "/jwks.json"
			if tc.same {
				jku = a.srv.URL + "/jwks.json"
			}
			a.set(func(a *extAgent) {
				a.jwks = signer.jwks
				a.extended = signer.sign(t, cardJSON("2.0.0", true, "summarize", "audit-ledger"), jku)
			})
			o := testOptions(nil)
			o.Signatures = SignatureOptions{JKU: JKUAny}
			if tc.cert {
				a.set(func(a *extAgent) { a.token = "required" }) // only the certificate lets it in
				dir := t.TempDir()
				certPath, keyPath, _ := writePEMPair(t, dir, "client")
				credFile := filepath.Join(dir, "creds.json")
				// The credential is held for the agent's origin only; the
				// other origin has one of its own, which it must not get either.
				body := fmt.Sprintf(`{%q: {"cert": %q, "key": %q}}`, a.srv.URL, filepath.Base(certPath), filepath.Base(keyPath))
				if err := os.WriteFile(credFile, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
				cf, err := OpenCredentials(credFile, CredentialsFileOptions{})
				if err != nil {
					t.Fatal(err)
				}
				o.Credentials = cf
				pool := x509.NewCertPool()
				pool.AddCert(a.srv.Certificate())
				pool.AddCert(other.srv.Certificate())
				o.TLSConfig = &tls.Config{RootCAs: pool}
			} else {
				o.Credentials = headerCreds(t, a.srv.URL, "Bearer "+testSecret)
			}
			f := newFetcher(t, o)
			_, ext, err := observeBoth(t, f, a)
			if err != nil {
				t.Fatalf("ObserveExtended: %v", err)
			}
			if len(ext.Signatures) != 1 || !ext.Signatures[0].Verified || ext.Signatures[0].Source != "jku" || ext.Signatures[0].JKU != jku {
				t.Fatalf("extended card signatures %+v, want one verified with the keys at %s", ext.Signatures, jku)
			}

			var keyRequests, extRequests []extRequest
			for _, r := range append(a.requests(), other.requests()...) {
				switch r.path {
				case "/jwks.json":
					keyRequests = append(keyRequests, r)
				case "/a2a":
					extRequests = append(extRequests, r)
				}
			}
			if len(keyRequests) == 0 {
				t.Fatalf("the jku %s was never fetched", jku)
			}
			for _, r := range keyRequests {
				if strings.Contains(r.auth, testSecret) || strings.Contains(r.auth, "Authorization") || r.cert {
					t.Errorf("the jku fetch presented a credential (certificate %v): %q", r.cert, r.auth)
				}
			}
			if tc.same {
				if n := len(other.requests()); n != 0 {
					t.Errorf("the other origin was asked %d times", n)
				}
			}
			// The extended card request itself did carry it.
			for _, r := range extRequests {
				if tc.cert && !r.cert || !tc.cert && r.auth != "Bearer "+testSecret {
					t.Errorf("the extended card request carried no credential: %+v", r)
				}
			}
			if len(extRequests) == 0 {
				t.Fatal("no extended card request")
			}
		})
	}
}

// testSecret is the credential value every secret-printing test looks for.
const testSecret = "s3cr3t-Bearer-token-7f1c"

// writePEMPair writes a self-signed client certificate and its key into dir
// and returns their paths (and the certificate, for a server to trust).
func writePEMPair(t testing.TB, dir, name string) (certPath, keyPath string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath, cert
}

func readFrom(dir string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, p)) }
}

func TestParseCredentials(t *testing.T) {
	dir := t.TempDir()
	writePEMPair(t, dir, "client")
	c, err := ParseCredentials([]byte(`{
		"https://Ledger.example:443/": {"headers": {"authorization": "Bearer `+testSecret+`", "X-Api-Key": "k1"}},
		"http://127.0.0.1:41241": {"cert": "client.pem", "key": "client.key"}
	}`), readFrom(dir))
	if err != nil {
		t.Fatalf("ParseCredentials: %v", err)
	}
	if got := c.Origins(); fmt.Sprint(got) != "[http://127.0.0.1:41241 https://ledger.example]" {
		t.Errorf("Origins = %v", got)
	}
	led, ok := c.For("https://ledger.example")
	if !ok || led.HasCertificate() {
		t.Fatalf("ledger credential = %v, %v", led, ok)
	}
	hs := led.Headers()
	if len(hs) != 2 || hs[0].Name != "Authorization" || hs[0].Value.Reveal() != "Bearer "+testSecret || hs[1].Name != "X-Api-Key" {
		t.Errorf("headers = %v", hs)
	}
	if cl, ok := c.For("http://127.0.0.1:41241"); !ok || !cl.HasCertificate() {
		t.Errorf("certificate credential = %v, %v", cl, ok)
	}
	if _, ok := c.For("https://other.example"); ok {
		t.Error("a credential for an origin the file does not name")
	}
}

func TestParseCredentialsErrors(t *testing.T) {
	dir := t.TempDir()
	writePEMPair(t, dir, "a")
	writePEMPair(t, dir, "b")
	big := `"` + strings.Repeat("x", MaxCredentialHeaderBytes) + `"`
	for _, tc := range []struct {
		name, file string
		want       error
		origin     string
	}{
		{"not JSON", `{"https://a.example": `, ErrCredentialsSyntax, ""},
		{"an array", `[]`, ErrCredentialsSyntax, ""},
		{"duplicate key", `{"https://a.example": {"headers": {"A": "1"}}, "https://a.example": {"headers": {"A": "2"}}}`, ErrCredentialsSyntax, ""},
		{"two spellings", `{"https://a.example": {"headers": {"A": "1"}}, "HTTPS://A.example:443": {"headers": {"A": "2"}}}`, ErrCredentialsDuplicate, "HTTPS://A.example:443"},
		{"a path", `{"https://a.example/x": {"headers": {"A": "1"}}}`, ErrNotOrigin, "https://a.example/x"},
		{"user info", `{"https://u:p@a.example": {"headers": {"A": "1"}}}`, ErrNotOrigin, "https://u:p@a.example"},
		{"ftp", `{"ftp://a.example": {"headers": {"A": "1"}}}`, ErrNotOrigin, "ftp://a.example"},
		{"entry not an object", `{"https://a.example": "Bearer x"}`, ErrCredentialsEntry, "https://a.example"},
		{"unknown member", `{"https://a.example": {"headers": {"A": "1"}, "extra": 1}}`, ErrCredentialsEntry, "https://a.example"},
		{"headers and cert", `{"https://a.example": {"headers": {"A": "1"}, "cert": "a.pem", "key": "a.key"}}`, ErrCredentialsEntry, "https://a.example"},
		{"no headers", `{"https://a.example": {"headers": {}}}`, ErrCredentialsEntry, "https://a.example"},
		{"headers an array", `{"https://a.example": {"headers": ["A"]}}`, ErrCredentialsEntry, "https://a.example"},
		{"header name with space", `{"https://a.example": {"headers": {"X Key": "1"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"header name with colon", `{"https://a.example": {"headers": {"X:": "1"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"reserved Host", `{"https://a.example": {"headers": {"host": "evil.example"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"reserved A2A-Version", `{"https://a.example": {"headers": {"A2A-Version": "0.3"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"header twice", `{"https://a.example": {"headers": {"x-key": "1", "X-Key": "2"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"value a number", `{"https://a.example": {"headers": {"X-Key": 1}}}`, ErrCredentialsHeader, "https://a.example"},
		{"value empty", `{"https://a.example": {"headers": {"X-Key": ""}}}`, ErrCredentialsHeader, "https://a.example"},
		{"value CRLF", `{"https://a.example": {"headers": {"X-Key": "a\r\nHost: evil"}}}`, ErrCredentialsHeader, "https://a.example"},
		{"value too long", `{"https://a.example": {"headers": {"X-Key": ` + big + `}}}`, ErrCredentialsTooLarge, "https://a.example"},
		{"cert missing", `{"https://a.example": {"cert": "none.pem", "key": "a.key"}}`, ErrCredentialsCertificate, "https://a.example"},
		{"cert without key", `{"https://a.example": {"cert": "a.pem"}}`, ErrCredentialsEntry, "https://a.example"},
		{"key of another cert", `{"https://a.example": {"cert": "a.pem", "key": "b.key"}}`, ErrCredentialsCertificate, "https://a.example"},
		{"cert not a string", `{"https://a.example": {"cert": 1, "key": "a.key"}}`, ErrCredentialsEntry, "https://a.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCredentials([]byte(tc.file), readFrom(dir))
			if !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
			var ce *CredentialsError
			if !errors.As(err, &ce) || ce.Origin != tc.origin {
				t.Errorf("error = %#v, want a *CredentialsError for origin %q", err, tc.origin)
			}
		})
	}
	many := make(map[string]any)
	for i := range MaxCredentialOrigins + 1 {
		many[fmt.Sprintf("https://a%d.example", i)] = map[string]any{"headers": map[string]string{"A": "1"}}
	}
	b, _ := json.Marshal(many)
	if _, err := ParseCredentials(b, nil); !errors.Is(err, ErrCredentialsTooLarge) {
		t.Errorf("%d origins: error = %v, want ErrCredentialsTooLarge", len(many), err)
	}
}

// TestCredentialErrorsNeverRepeatSecrets: whatever is wrong with a
// credentials file, its error text does not repeat a value (the JSON
// parser's quote of the input is dropped).
func TestCredentialErrorsNeverRepeatSecrets(t *testing.T) {
	for _, file := range []string{
		`{"https://a.example": {"headers": {"X-Key": "` + testSecret + `\u0001"}}}`,
		`{"https://a.example": {"headers": {"X-Key": "` + testSecret + `", "x-key": "` + testSecret + `"}}}`,
		`{"https://a.example": {"headers": {"X-Key": "` + testSecret + `" "B": 1}}}`,
		`{"https://a.example": {"headers": {"X-Key": "` + testSecret + `\x"}}}`,
		`{"https://a.example": {"headers": {"X-Key": " ` + testSecret + `"}}}`,
		`{"https://a.example": {"headers": {"Host": "` + testSecret + `"}}}`,
		`{"` + testSecret + `": {"headers": {"X-Key": "1"}}}`[:20] + testSecret,
	} {
		_, err := ParseCredentials([]byte(file), nil)
		if err == nil {
			t.Fatalf("%s: parsed", file)
		}
		if strings.Contains(err.Error(), testSecret) || strings.Contains(fmt.Sprintf("%#v", err), testSecret) {
			t.Errorf("error repeats the secret: %v", err)
		}
	}
}

// TestSecretNeverPrints: a Secret and a Credential print redacted through
// fmt (every verb), JSON, zerolog and slog.
func TestSecretNeverPrints(t *testing.T) {
	c, err := ParseCredentials([]byte(`{"https://a.example": {"headers": {"Authorization": "Bearer `+testSecret+`"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	cr, _ := c.For("https://a.example")
	s := cr.Headers()[0].Value
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		fmt.Fprintf(&out, verb+"|", s)
		fmt.Fprintf(&out, verb+"|", cr)
		fmt.Fprintf(&out, verb+"|", cr.Headers())
		fmt.Fprintf(&out, verb+"|", c)
		fmt.Fprintf(&out, verb+"|", struct{ c Credential }{cr})
		fmt.Fprintf(&out, verb+"|", struct{ c *Credentials }{c})
	}
	j, _ := json.Marshal(map[string]any{"s": s, "c": cr, "h": cr.Headers(), "all": c})
	out.Write(j)
	zl := zerolog.New(&out)
	zl.Info().Interface("s", s).Interface("c", cr).Stringer("str", s).Any("h", cr.Headers()).Any("all", c).Msg("x")
	slog.New(slog.NewJSONHandler(&out, nil)).Info("x", "s", s, "c", cr, "h", cr.Headers())
	slog.New(slog.NewTextHandler(&out, nil)).Info("x", "s", s, "c", cr, "h", cr.Headers())
	if strings.Contains(out.String(), testSecret) {
		t.Errorf("the secret printed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), redacted) || !strings.Contains(out.String(), "headers Authorization") {
		t.Errorf("no redacted value or header name printed:\n%s", out.String())
	}
}

func TestCredentialsFileReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "creds.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"https://a.example": {"headers": {"X-Key": "one"}}}`)
	clk := newClock()
	var reloads atomic.Int64
	var lastErr atomic.Value
	cf, err := OpenCredentials(path, CredentialsFileOptions{Reload: time.Second, Now: clk.Now,
		OnReload: func(_ int, err error) { reloads.Add(1); lastErr.Store(fmt.Sprint(err)) }})
	if err != nil {
		t.Fatal(err)
	}
	key := func(origin string) string {
		c, ok := cf.For(origin)
		if !ok {
			return ""
		}
		return c.Headers()[0].Value.Reveal()
	}
	if got := key("https://a.example"); got != "one" {
		t.Fatalf("first version: %q", got)
	}
	// Within Reload the file is not looked at again.
	write(`{"https://a.example": {"headers": {"X-Key": "two"}}, "https://b.example": {"headers": {"X-Key": "b"}}}`)
	if got := key("https://a.example"); got != "one" {
		t.Errorf("before Reload passed: %q", got)
	}
	clk.Advance(time.Second)
	if got := key("https://a.example"); got != "two" || key("https://b.example") != "b" {
		t.Errorf("after Reload: a %q, b %q", got, key("https://b.example"))
	}
	if reloads.Load() != 1 {
		t.Errorf("reloads = %d, want 1", reloads.Load())
	}
	// A version that does not parse keeps the previous one, reported once.
	write(`{"https://a.example": {"headers": {"X-Key": "` + testSecret + `\u0000"}}}`)
	clk.Advance(time.Second)
	if got := key("https://a.example"); got != "two" {
		t.Errorf("after a bad version: %q", got)
	}
	clk.Advance(time.Second)
	key("https://a.example")
	if n := reloads.Load(); n != 2 {
		t.Errorf("reloads = %d, want 2 (the bad version reported once)", n)
	}
	if e, _ := lastErr.Load().(string); !strings.Contains(e, "bad header") || strings.Contains(e, testSecret) {
		t.Errorf("reload error = %q", e)
	}
	// Removing an origin takes its credential away.
	write(`{"https://b.example": {"headers": {"X-Key": "b2"}}}`)
	clk.Advance(time.Second)
	if _, ok := cf.For("https://a.example"); ok || key("https://b.example") != "b2" {
		t.Errorf("after removing a.example: a present %v, b %q", ok, key("https://b.example"))
	}
	// A certificate rotated in place is read again.
	c1, k1, _ := writePEMPair(t, dir, "client")
	write(`{"https://c.example": {"cert": "client.pem", "key": "client.key"}}`)
	clk.Advance(time.Second)
	first, ok := cf.For("https://c.example")
	if !ok || !first.HasCertificate() {
		t.Fatal("no certificate credential")
	}
	writePEMPair(t, dir, "client")
	_ = c1
	_ = k1
	clk.Advance(time.Second)
	second, _ := cf.For("https://c.example")
	if first.cert == second.cert || bytes.Equal(first.cert.Certificate[0], second.cert.Certificate[0]) {
		t.Error("a rotated certificate was not read again")
	}
	if _, err := OpenCredentials(filepath.Join(dir, "none.json"), CredentialsFileOptions{}); err == nil {
		t.Error("OpenCredentials of a missing file succeeded")
	}
}

// FuzzParseCredentials: any bytes either parse into credentials whose
// origins are in normal form, or fail with a *CredentialsError whose text
// repeats no header value of the input.
func FuzzParseCredentials(f *testing.F) {
	f.Add([]byte(`{"https://a.example": {"headers": {"Authorization": "Bearer x"}}}`))
	f.Add([]byte(`{"http://127.0.0.1:8080": {"cert": "c.pem", "key": "c.key"}}`))
	f.Add([]byte(`{"https://A.example:443/": {"headers": {"X-Key": "1", "X-Other": "2"}}}`))
	f.Add([]byte(`{"https://a.example": {"headers": {"Host": "h"}}}`))
	f.Add([]byte(`{"https://a.example": "x"}`))
	f.Add([]byte(`[{"a":1}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCredentials(b, func(string) ([]byte, error) { return nil, os.ErrNotExist })
		if err != nil {
			var ce *CredentialsError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not a *CredentialsError", err, err)
			}
			return
		}
		for _, o := range c.Origins() {
			if n, err := ParseOrigin(o); err != nil || n != o {
				t.Fatalf("origin %q not in normal form (%q, %v)", o, n, err)
			}
			cr, _ := c.For(o)
			want := "client certificate"
			if !cr.HasCertificate() {
				var names []string
				for _, h := range cr.Headers() {
					if h.Value.Reveal() == "" {
						t.Fatalf("header %s with an empty value", h.Name)
					}
					names = append(names, h.Name)
				}
				want = "headers " + strings.Join(names, ", ")
			}
			if got := fmt.Sprintf("%v %s %#v", cr, cr, cr); got != want+" "+want+" "+want {
				t.Fatalf("credential prints %q, want its header names %q only", got, want)
			}
		}
	})
}

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
