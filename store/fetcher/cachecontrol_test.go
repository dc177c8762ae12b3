package fetcher

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

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
