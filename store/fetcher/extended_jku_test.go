package fetcher

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

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
