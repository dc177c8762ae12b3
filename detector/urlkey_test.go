package detector

import "testing"

// urlSeeds are spellings of interface urls, well-formed and not: the seed
// corpus of FuzzNormalizeURL, and TestNormalizeURLAgreesWithLegacy's table.
var urlSeeds = []string{
	"https://Agent.Example.com:443", "https://agent.example.com/", "HTTPS://agent.example.com",
	"http://agent.example.com:80/a2a", "http://agent.example.com:/a2a", "https://agent.example.com:8443/a2a",
	"http://agent.example.com:443/a2a", "https://agent.example.com/A2A?x=1", "https://agent.example.com/a?",
	"https://agent.example.com/a??", "https://agent.example.com/a b", "https://agent.example.com/a%20b",
	"https://agent.example.com/a%2fb", "https://agent.example.com/a%2Fb%zz", "https://agent.example.com/%7e",
	"https://agent.example.com/ü", "https://agent.example.com/a#frag", "https://agent.example.com/a#fr ag",
	"https://agent.example.com/a#%41", "https://agent.example.com/a#%", "https://agent.example.com/a#",
	"https://user:p%40ss@Agent.example.com/", "https://us er@agent.example.com/", "https://a@b@agent.example.com/",
	"https://user@agent.example.com", "https://:pw@agent.example.com", "https://%41@agent.example.com",
	"https://[::1]:443", "https://[::1]", "https://[FE80::1%25en0]:8443/a2a", "https://[fe80::1%25]/",
	"https://[::ffff:1.2.3.4]/", "https://[1.2.3.4]/", "https://[::1", "https://x[::1]/", "https://[1:2:3:4:5:6:7:8]/",
	"https://[1:2:3:4:5:6:7::]/", "https://[1::2::3]/", "https://[::1.2.3.04]/", "https://[12345::]/", "https://[::]/",
	"https://[1:2:3:4:5:6:1.2.3.4]/", "https://[1:2:3:4:5:1.2.3.4]/", "https://[:1]/", "https://[1:]/",
	"https://a:b:443/", "mongodb://a:1,b:2/db", "mongodb://a:1:2/db", "https://agent.example.com:x/",
	"https://agent%2Eexample.com/", "https://agent%c3%bc.example/", "https://ag<ent/", "https://agent.Example.com:/",
	"https://:443", "//Agent.Example.com:80/x", "///a", "http:///a", "http:/a", "grpc.example.com:443", "localhost:50051",
	"", "%zz", "*", ":foo", "a:b/c", "HTTP://a.b", "h\x7ftp://a", "https://a.b/\x01", "https://a.b/#\x01",
	"https://Agent.example.com:0443", "https://agent.example.com:443:443/", "ws://Host:80/", "git+ssh://HOST:22/x",
}

func TestNormalizeURLAgreesWithLegacy(t *testing.T) {
	for _, s := range urlSeeds {
		if got, want := normalizeURL(s), legacyNormalizeURL(s); got != want {
			t.Errorf("normalizeURL(%q) = %q, the hand copy gave %q", s, got, want)
		}
	}
}

// FuzzNormalizeURL holds normalizeURL on net/url to the hand copy it
// replaced: the same key for every input, so no two interface urls became
// the same endpoint, or stopped being one, when the detector moved to
// net/url.
func FuzzNormalizeURL(f *testing.F) {
	for _, s := range urlSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := normalizeURL(s), legacyNormalizeURL(s); got != want {
			t.Errorf("normalizeURL(%q) = %q, the hand copy gave %q", s, got, want)
		}
	})
}
