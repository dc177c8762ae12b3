package fetcher

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
	for _, tc := range []struct {
		name  string
		creds CredentialSource
		card  func(pub *Observation)
		why   string
	}{
		{"no credentials", nil, nil, "no-credentials"},
		{"another origin's credentials", headerCreds(t, "https://other.example", "Bearer x"), nil, "no-credentials"},
		{"not offered", headerCreds(t, a.srv.URL, "x"), func(p *Observation) {
			c := *p.Card
			c.Capabilities.ExtendedAgentCard = false
			p.Card = &c
		}, "not-offered"},
		{"interface on another origin", headerCreds(t, a.srv.URL, "x"), func(p *Observation) {
			c := *p.Card
			c.Interfaces = append(c.Interfaces[:0:0], c.Interfaces...)
			c.Interfaces[0].URL = "https://other.example/a2a"
			p.Card = &c
		}, "no-interface"},
		{"gRPC only", headerCreds(t, a.srv.URL, "x"), func(p *Observation) {
			c := *p.Card
			c.Interfaces = append(c.Interfaces[:0:0], c.Interfaces...)
			c.Interfaces[0].ProtocolBinding = "GRPC"
			p.Card = &c
		}, "no-interface"},
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
