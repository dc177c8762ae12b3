package schemas_test

import (
	"math/big"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/schemas"
)

// TestPlainHTTPURL holds plainHTTPURL, the uri format's shortcut, to the
// format as url.Parse decides it: every URL it passes, the general check
// accepts; agent and card URLs pass it.
func TestPlainHTTPURL(t *testing.T) {
	for _, s := range []string{"https://a.example", "http://127.0.0.1:8080", "http://127.0.0.1:8080/a2a",
		"https://agent.example/.well-known/agent-card.json", "https://a.example:/x", "HTTP://A"} {
		want := s != "HTTP://A"
		if got := schemas.PlainHTTPURL(s); got != want {
			t.Errorf("plainHTTPURL(%q) = %v, want %v", s, got, want)
		}
	}
	alphabet := "aZ09.-_~!$&'()*+,;=:@/%?#[] \t\xff\\"
	rng := rand.New(rand.NewPCG(21, 1))
	passed := 0
	for i := range 50000 {
		b := make([]byte, rng.IntN(12))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		s := []string{"http://", "https://", "http:/", "ftp://", "https:"}[i%5] + string(b)
		if !schemas.PlainHTTPURL(s) {
			continue
		}
		passed++
		if !schemas.IsURIGeneral(s) {
			t.Errorf("plainHTTPURL(%q) = true, the uri format rejects it", s)
		}
	}
	if passed < 300 {
		t.Errorf("only %d random URLs passed plainHTTPURL", passed)
	}
}

// TestFastPatterns holds the loops that stand for the hot patterns to the
// regular expressions themselves, on random strings over the patterns'
// alphabets.
func TestFastPatterns(t *testing.T) {
	alphabet := "aAzZ09_-.:/?#~ \t\f\v\nsShHtTpP:é\xff" + "sha256:"
	rng := rand.New(rand.NewPCG(35, 1))
	for src, fast := range schemas.FastPatterns {
		re := regexp.MustCompile(src)
		seeds := []string{"", "https://a", "sha256:" + strings.Repeat("a", 64), "working", "skill-removed", strings.Repeat("a", 64)}
		for i := range 20000 {
			s := seeds[i%len(seeds)]
			b := []byte(s)
			for range rng.IntN(4) {
				switch j := rng.IntN(len(b) + 1); rng.IntN(3) {
				case 0:
					b = slices.Insert(b, j, alphabet[rng.IntN(len(alphabet))])
				case 1:
					if j < len(b) {
						b = slices.Delete(b, j, j+1)
					}
				default:
					if j < len(b) {
						b[j] = alphabet[rng.IntN(len(alphabet))]
					}
				}
			}
			if got, want := fast(string(b)), re.MatchString(string(b)); got != want {
				t.Errorf("pattern %s on %q: loop %v, regexp %v", src, b, got, want)
			}
		}
	}
}

// TestTame holds the exponent cap of number literals to big.Rat on the
// literal itself: the same integrality and the same order against the
// bounds and constants of the schemas.
func TestTame(t *testing.T) {
	bounds := []int64{0, 1, -1, 200, 304, 2147483647, -2147483648}
	for _, lit := range []string{"1e2000", "1.5e2000", "-1.5e2000", "1e-2000", "0e-2000", "0.0e2000", "-0.5e+2000",
		"123.456e-1999", "1E+1234", "-7e-1500", "1e999", "1.25e3", "10e-1"} {
		want, ok1 := new(big.Rat).SetString(lit)
		got, ok2 := new(big.Rat).SetString(schemas.Tame(lit))
		if !ok1 || !ok2 {
			t.Fatalf("%s: big.Rat reads the literal %v, tamed %q %v", lit, ok1, schemas.Tame(lit), ok2)
		}
		if want.IsInt() != got.IsInt() {
			t.Errorf("%s: integer %v, tamed %q %v", lit, want.IsInt(), schemas.Tame(lit), got.IsInt())
		}
		for _, b := range bounds {
			q := new(big.Rat).SetInt64(b)
			if want.Cmp(q) != got.Cmp(q) {
				t.Errorf("%s against %d: %d, tamed %q %d", lit, b, want.Cmp(q), schemas.Tame(lit), got.Cmp(q))
			}
		}
	}
	for _, lit := range []string{"1e99999999999999999999", "-1e-99999999999999999999", "1e1000000"} {
		if _, ok := new(big.Rat).SetString(schemas.Tame(lit)); !ok || len(schemas.Tame(lit)) > 20 {
			t.Errorf("%s tamed to %q", lit, schemas.Tame(lit))
		}
	}
}
