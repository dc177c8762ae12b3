package fetcher

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

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
