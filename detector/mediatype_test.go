package detector

import (
	"slices"
	"testing"
)

// TestNormalizers: the comparable forms of media types and interface urls.
func TestNormalizers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fn    func(string) string
		cases []struct{ in, want string }
	}{
		{"NormalizeMediaType", NormalizeMediaType, []struct{ in, want string }{
			{"text/plain", "text/plain"},
			{"Text/Plain", "text/plain"},
			{"text/plain; charset=utf-8", "text/plain"},
			{" application/json ;q=0.9", "application/json"},
			{"image / png", "image/png"},
			{"text", "text/plain"},
			{"TEXT", "text/plain"},
			{"data", "application/json"},
			{"file", "*/*"},
			{"*", "*/*"},
			{"*/*", "*/*"},
			{"image/*", "image/*"},
			{"task-status", "task-status"},
			{"application/vnd.geo+json", "application/vnd.geo+json"},
			{"", ""},
			{"  ", ""},
			{";charset=utf-8", ""},
		}},
		{"normalizeURL", normalizeURL, []struct{ in, want string }{
			{"https://Agent.Example.com:443", "https://agent.example.com/"},
			{"https://agent.example.com/", "https://agent.example.com/"},
			{"HTTPS://agent.example.com", "https://agent.example.com/"},
			{"http://agent.example.com:80/a2a", "http://agent.example.com/a2a"},
			{"http://agent.example.com:/a2a", "http://agent.example.com/a2a"},
			{"https://agent.example.com:8443/a2a", "https://agent.example.com:8443/a2a"},
			{"http://agent.example.com:443/a2a", "http://agent.example.com:443/a2a"},
			{"https://agent.example.com/A2A?x=1", "https://agent.example.com/A2A?x=1"},
			{"https://[::1]:443", "https://[::1]/"},
			{"grpc.example.com:443", "grpc.example.com:443"},
			{"", ""},
			{"%zz", "%zz"},
		}},
	} {
		for _, c := range tc.cases {
			if got := tc.fn(c.in); got != c.want {
				t.Errorf("%s(%q) = %q, want %q", tc.name, c.in, got, c.want)
			}
		}
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		modes     []string
		mediaType string
		want      bool
	}{
		{"exact", []string{"text/plain"}, "text/plain", true},
		{"case and parameters", []string{"Text/Plain; charset=utf-8"}, "text/PLAIN;format=flowed", true},
		{"subtype wildcard", []string{"image/*"}, "image/png", true},
		{"subtype wildcard covers itself", []string{"image/*"}, "image/*", true},
		{"subtype wildcard is not a prefix match", []string{"image/*"}, "imagery/png", false},
		{"subtype wildcard, other type", []string{"image/*"}, "text/plain", false},
		{"full wildcard", []string{"*/*"}, "application/pdf", true},
		{"full wildcard covers wildcards", []string{"*/*"}, "video/*", true},
		{"concrete does not cover wildcard", []string{"image/png"}, "image/*", false},
		{"legacy text", []string{"text"}, "text/plain", true},
		{"legacy text asked for", []string{"text/plain"}, "text", true},
		{"legacy data", []string{"data"}, "application/json", true},
		{"legacy file covers any file", []string{"file"}, "application/pdf", true},
		{"one of several", []string{"application/json", "text/html"}, "text/html", true},
		{"none declared", nil, "text/plain", false},
		{"empty media type", []string{"*/*"}, "", false},
		{"vendor token", []string{"task-status"}, "task-status", true},
		{"different subtype", []string{"text/plain"}, "text/html", false},
	} {
		if got := Covers(tc.modes, tc.mediaType); got != tc.want {
			t.Errorf("%s: Covers(%q, %q) = %v, want %v", tc.name, tc.modes, tc.mediaType, got, tc.want)
		}
	}
}

func TestModeDelta(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		before, after          []string
		wantRemoved, wantAdded []string
	}{
		{"same", []string{"text/plain"}, []string{"text/plain"}, nil, nil},
		{"reordered", []string{"a/b", "c/d"}, []string{"c/d", "a/b"}, nil, nil},
		{"case, parameters, legacy, duplicates", []string{"text", "application/json"}, []string{"application/JSON; charset=utf-8", "text/plain", "text/plain"}, nil, nil},
		{"absorbed by a wildcard", []string{"*/*"}, []string{"*/*", "text/plain"}, nil, nil},
		{"removed", []string{"text/plain", "image/png"}, []string{"text/plain"}, []string{"image/png"}, nil},
		{"added", []string{"text/plain"}, []string{"text/plain", "image/png"}, nil, []string{"image/png"}},
		{"widened to a wildcard", []string{"image/png", "image/jpeg"}, []string{"image/*"}, nil, []string{"image/*"}},
		{"narrowed from a wildcard", []string{"image/*"}, []string{"image/png"}, []string{"image/*"}, nil},
		{"replaced, declared spelling kept", []string{"Text"}, []string{"data"}, []string{"Text"}, []string{"data"}},
		{"nil and empty", nil, []string{}, nil, nil},
		{"to nothing", []string{"text/plain"}, nil, []string{"text/plain"}, nil},
	} {
		removed, added := modeDelta(tc.before, tc.after)
		if !slices.Equal(removed, tc.wantRemoved) || !slices.Equal(added, tc.wantAdded) {
			t.Errorf("%s: modeDelta(%q, %q) = %q, %q, want %q, %q", tc.name, tc.before, tc.after, removed, added, tc.wantRemoved, tc.wantAdded)
		}
	}
}

func TestNormalizeModes(t *testing.T) {
	got := normalizeModes([]string{"text/plain; charset=utf-8", "image/png", "TEXT", "image/*", "application/json"})
	want := []string{"application/json", "image/*", "text/plain"}
	if !slices.Equal(got, want) {
		t.Errorf("normalizeModes(...) = %q, want %q", got, want)
	}
}
