package fetcher

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
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

func TestParseCacheControl(t *testing.T) {
	tests := []struct {
		in         []string
		maxAge     time.Duration
		hasMaxAge  bool
		revalidate bool
	}{
		{in: nil},
		{in: []string{"max-age=60"}, maxAge: time.Minute, hasMaxAge: true},
		{in: []string{"MAX-AGE=60"}, maxAge: time.Minute, hasMaxAge: true},
		{in: []string{` public , max-age = 60 `}, maxAge: time.Minute, hasMaxAge: true},
		{in: []string{`max-age="60"`}, maxAge: time.Minute, hasMaxAge: true},
		{in: []string{"public", "max-age=5"}, maxAge: 5 * time.Second, hasMaxAge: true},
		{in: []string{`private="a, b", max-age=7`}, maxAge: 7 * time.Second, hasMaxAge: true},
		{in: []string{"max-age=0"}, hasMaxAge: true},
		{in: []string{"no-cache"}, revalidate: true},
		{in: []string{`no-cache="Set-Cookie", max-age=60`}, maxAge: time.Minute, hasMaxAge: true, revalidate: true},
		{in: []string{"No-Store"}, revalidate: true},
		{in: []string{"max-age=60, max-age=60"}, maxAge: time.Minute, hasMaxAge: true},
		{in: []string{"max-age=60", "max-age=30"}, maxAge: 30 * time.Second, hasMaxAge: true, revalidate: true},
		{in: []string{"max-age"}, revalidate: true},
		{in: []string{"max-age=-1"}, revalidate: true},
		{in: []string{"max-age=1.5"}, revalidate: true},
		{in: []string{"max-age=99999999999999999999999"}, maxAge: maxDeltaSeconds * time.Second, hasMaxAge: true},
		{in: []string{",,, max-age=3 ,"}, maxAge: 3 * time.Second, hasMaxAge: true},
		{in: []string{`s-maxage=600`}},
		{in: []string{`"unterminated, max-age=60`}}, // unparseable: ignored
	}
	for _, tc := range tests {
		got := parseCacheControl(tc.in)
		want := cacheControl{maxAge: tc.maxAge, hasMaxAge: tc.hasMaxAge, revalidate: tc.revalidate}
		if got != want {
			t.Errorf("parseCacheControl(%q) = %+v, want %+v", tc.in, got, want)
		}
	}
}

func TestLeaseFor(t *testing.T) {
	const lo, hi, def = time.Second, 5 * time.Minute, 30 * time.Second
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	tests := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", h(), def},
		{"max-age", h("Cache-Control", "max-age=120"), 2 * time.Minute},
		{"max-age=0", h("Cache-Control", "max-age=0"), lo},
		{"no-cache", h("Cache-Control", "no-cache, max-age=120"), lo},
		{"above", h("Cache-Control", "max-age=3600"), hi},
		{"age", h("Cache-Control", "max-age=120", "Age", "100"), 20 * time.Second},
		{"bad age ignored", h("Cache-Control", "max-age=120", "Age", "soon"), 2 * time.Minute},
		{"age does not shorten the default", h("Age", "25"), def},
	}
	for _, tc := range tests {
		if got := leaseFor(tc.h, def, lo, hi); got != tc.want {
			t.Errorf("%s: leaseFor(%v) = %v, want %v", tc.name, tc.h, got, tc.want)
		}
	}
}

func TestParseETag(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{`"abc"`}, `"abc"`},
		{[]string{` W/"v1.0" `}, `W/"v1.0"`},
		{[]string{`""`}, `""`},
		{[]string{`abc123`}, `abc123`}, // unquoted, as some servers send
		{[]string{`"a"`, `"b"`}, ""},
		{[]string{`"a"b"`}, ""},
		{[]string{`"a b"`}, ""},
		{[]string{`a,b`}, ""},
		{[]string{`W/abc`}, ""},
		{[]string{"\"a\r\nX-Evil: 1\""}, ""},
		{[]string{`"` + strings.Repeat("x", maxETagLen) + `"`}, ""},
	}
	for _, tc := range tests {
		if got := parseETag(tc.in); got != tc.want {
			t.Errorf("parseETag(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzCacheHeaders checks the header parsers on arbitrary input: no panic, a
// lease within the clamp, and an ETag that is safe to send back verbatim.
// Seed corpus: testdata/fuzz/FuzzCacheHeaders.
func FuzzCacheHeaders(f *testing.F) {
	f.Add("max-age=60", "", `"v1"`)
	f.Add("no-cache", "10", `W/"x"`)
	f.Add(`private="a,b", max-age="30"`, "5", "bare")
	f.Fuzz(func(t *testing.T, cc, age, etag string) {
		const lo, hi, def = time.Second, time.Hour, time.Minute
		h := http.Header{}
		for _, line := range strings.Split(cc, "\n") {
			h.Add("Cache-Control", line)
		}
		h.Set("Age", age)
		d := leaseFor(h, def, lo, hi)
		if d < lo || d > hi {
			t.Fatalf("leaseFor(%q, Age %q) = %v outside [%v, %v]", cc, age, d, lo, hi)
		}
		parsed := parseCacheControl(h.Values("Cache-Control"))
		if parsed.maxAge < 0 || parsed.maxAge > maxDeltaSeconds*time.Second {
			t.Fatalf("maxAge %v out of range", parsed.maxAge)
		}
		if again := parseCacheControl(h.Values("Cache-Control")); again != parsed {
			t.Fatalf("parseCacheControl not deterministic")
		}
		got := parseETag([]string{etag})
		if got == "" {
			return
		}
		if len(got) > maxETagLen || !validHeaderValue(got) || strings.ContainsAny(got, " \t\r\n,") && !strings.HasSuffix(got, `"`) {
			t.Fatalf("parseETag(%q) = %q: not safe to send back", etag, got)
		}
		for i := 0; i < len(got); i++ {
			if got[i] < 0x21 || got[i] == 0x7f {
				t.Fatalf("parseETag(%q) = %q contains byte %#x", etag, got, got[i])
			}
		}
		if parseETag([]string{got}) != got {
			t.Fatalf("parseETag not idempotent on %q", got)
		}
	})
}

// check reports an lru whose byte count is not the sum of its entries'
// sizes, that exceeds a bound, or whose map and list disagree.
func (c *lru[K, V]) check() error {
	var sum int64
	for el := c.order.Front(); el != nil; el = el.Next() {
		sum += el.Value.(*lruEntry[K, V]).size
	}
	if c.bytes != sum || c.bytes > c.maxBytes || c.order.Len() > c.maxEntries || c.order.Len() != len(c.items) {
		return fmt.Errorf("%d entries (%d in the map) of %d bytes (entries sum to %d); bounds %d entries, %d bytes",
			c.order.Len(), len(c.items), c.bytes, sum, c.maxEntries, c.maxBytes)
	}
	return nil
}

func TestLRU(t *testing.T) {
	c := newLRU[string, int](3, 100)
	for i, k := range []string{"a", "b", "c"} {
		c.put(k, i, 30)
	}
	c.get("a") // b is now the least recently used
	c.put("d", 3, 30)
	if _, ok := c.get("b"); ok {
		t.Error("the least recently used entry was kept past the count bound")
	}
	c.put("e", 4, 60) // 30 (a) + 30 (c) + 30 (d) + 60: c and a go (a was read before d and e)
	for k, want := range map[string]bool{"a": false, "c": false, "d": true, "e": true} {
		if _, ok := c.get(k); ok != want {
			t.Errorf("after a 60-byte put: get(%q) found = %v, want %v", k, ok, want)
		}
	}
	c.put("d", 5, 101)
	if _, ok := c.get("d"); ok {
		t.Error("an entry larger than the byte bound was kept, or the value it replaced")
	}
	if v, ok := c.get("e"); !ok || v != 4 || c.len() != 1 || c.size() != 60 {
		t.Errorf("get(e) = %d, %v; len %d, size %d; want 4, true; 1, 60", v, ok, c.len(), c.size())
	}
	c.remove("e")
	if c.len() != 0 || c.size() != 0 {
		t.Errorf("after remove: len %d, size %d, want 0, 0", c.len(), c.size())
	}
	if err := c.check(); err != nil {
		t.Error(err)
	}
}
