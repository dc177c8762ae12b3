package fetcher

import (
	"crypto/tls"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestOptionsDefaults(t *testing.T) {
	var o Options
	o.setDefaults()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"ConnectTimeout", o.ConnectTimeout, 3 * time.Second},
		{"TotalTimeout", o.TotalTimeout, 10 * time.Second},
		{"MaxBodyBytes", o.MaxBodyBytes, int64(1 << 20)},
		{"MaxRedirects", o.MaxRedirects, 3},
		{"PerHostConcurrency", o.PerHostConcurrency, 4},
		{"MinLease", o.MinLease, time.Second},
		{"MaxLease", o.MaxLease, 5 * time.Minute},
		{"DefaultLease", o.DefaultLease, 30 * time.Second},
		{"FullFetchInterval", o.FullFetchInterval, 5 * time.Minute},
		{"A2AVersion", o.A2AVersion, "1.0"},
		{"Accept", o.Accept, "application/json"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("default %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	neg := Options{MinLease: -1}
	neg.setDefaults()
	if neg.MinLease != 0 {
		t.Errorf("MinLease -1 → %v, want 0", neg.MinLease)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"connect over total", func(o *Options) { o.ConnectTimeout, o.TotalTimeout = 5*time.Second, time.Second }, "exceeds TotalTimeout"},
		{"body too big", func(o *Options) { o.MaxBodyBytes = 2 << 20 }, "MaxBodyBytes"},
		{"min over max", func(o *Options) { o.MinLease, o.MaxLease = time.Hour, time.Minute }, "MinLease"},
		{"insecure", func(o *Options) { o.TLSConfig = &tls.Config{InsecureSkipVerify: true} }, "InsecureSkipVerify"},
		{"header injection", func(o *Options) { o.UserAgent = "x\r\nEvil: 1" }, "UserAgent"},
		{"bad prefix", func(o *Options) { o.Allow = []netip.Prefix{{}} }, "Allow"},
		{"negative concurrency", func(o *Options) { o.PerHostConcurrency = -1 }, "PerHostConcurrency"},
	}
	for _, tc := range tests {
		var o Options
		tc.mod(&o)
		_, err := New(o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestReasonsHaveSentinels(t *testing.T) {
	seen := map[Reason]bool{}
	for _, r := range Reasons() {
		if seen[r] {
			t.Errorf("reason %q listed twice", r)
		}
		seen[r] = true
		for _, q := range Reasons() {
			if got := errors.Is(&FetchError{Reason: r}, q); got != (q == r) {
				t.Errorf("errors.Is(FetchError{Reason: %q}, %q) = %v, want %v", r, q, got, q == r)
			}
		}
	}
}

func TestParseAllow(t *testing.T) {
	got, err := ParseAllow(" 127.0.0.0/8, ::1 ,10.1.2.3/16,, 169.254.169.254")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.0/8", "::1/128", "10.1.0.0/16", "169.254.169.254/32"}
	if len(got) != len(want) {
		t.Fatalf("ParseAllow = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("ParseAllow[%d] = %v, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "localhost", "1.2.3"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) = nil error", bad)
		}
	}
}

func TestAllowMappedPrefix(t *testing.T) {
	f := newFetcher(t, Options{Allow: []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.0/104")}})
	if err := f.guard.check(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("::ffff:127.0.0.0/104 does not allow 127.0.0.1: %v", err)
	}
}
