package schemas_test

import (
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
