package jcs_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	gowebpki "github.com/gowebpki/jcs"

	"github.com/carddrift/carddrift/detector/jcs"
	"github.com/carddrift/carddrift/detector/jcs/jcstest"
)

// The vectors under testdata/ and the cards under ../testdata/cards are
// copies of the project's published fixtures (see the READMEs there);
// TestFixturesIntact checks them against their manifests.

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no files match %s", pattern)
	}
	return files
}

// globN is glob for a pattern that must match exactly want files.
func globN(t *testing.T, pattern string, want int) []string {
	t.Helper()
	files := glob(t, pattern)
	if len(files) != want {
		t.Errorf("found %d files matching %s, want %d", len(files), pattern, want)
	}
	return files
}

// TestCyberphone runs the RFC author's companion vectors: input/X must
// canonicalize to output/X, and outhex/X must spell the same bytes.
func TestCyberphone(t *testing.T) {
	for _, in := range globN(t, "testdata/cyberphone/input/*.json", 6) {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			want := jcstest.ReadFile(t, filepath.Join("testdata/cyberphone/output", name))
			hexText := jcstest.ReadFile(t, filepath.Join("testdata/cyberphone/outhex", strings.TrimSuffix(name, ".json")+".txt"))
			wantHex, err := hex.DecodeString(strings.Join(strings.Fields(string(hexText)), ""))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want, wantHex) {
				t.Fatalf("output/%s and outhex disagree", name)
			}
			got, err := jcs.Transform(jcstest.ReadFile(t, in))
			if err != nil {
				t.Fatalf("Transform(%s) error: %v", name, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Transform(%s) =\n%s\nwant\n%s", name, got, want)
			}
		})
	}
}

// tckRejects names the typed error each must-reject vector gets. The A2
// rejects are valid JSON in canonical form that still carries "signatures":
// RFC 8785 has no objection to them, the A2A signing rule does (carddrift
// never takes a signing payload it did not build: package signature makes
// each from the card), so here they are only checked to be accepted and
// already canonical.
var tckRejects = map[string]error{
	"A2-REJECT-003": nil,
	"A2-REJECT-004": nil,
	"A3-REJECT-011": jcs.ErrInvalidUTF8, // key with lone high surrogate
	"A3-REJECT-012": jcs.ErrInvalidUTF8, // key with lone low surrogate
	"A4-REJECT-013": jcs.ErrInvalidUTF8,
	"A4-REJECT-014": jcs.ErrInvalidUTF8,
	"A4-REJECT-015": jcs.ErrInvalidUTF8,
	"A5-REJECT-016": jcs.ErrNotJSON, // NaN
	"A5-REJECT-017": jcs.ErrNotJSON, // Infinity
	"A5-REJECT-018": jcs.ErrNotJSON, // -Infinity
}

func TestTCKVectors(t *testing.T) {
	accepted, rejected := 0, 0
	for _, v := range jcstest.TCK(t, "testdata") {
		t.Run(v.ID, func(t *testing.T) {
			switch v.Disposition {
			case "MUST-ACCEPT":
				accepted++
				want, err := hex.DecodeString(v.Expected.CanonicalUTF8Hex)
				if err != nil || len(v.Input) == 0 {
					t.Fatalf("malformed vector: input %d bytes, hex error %v", len(v.Input), err)
				}
				// Group A2 strips the top-level signatures first.
				opt := jcs.Options{}
				if strings.HasPrefix(v.ID, "A2-") {
					opt = jcs.Options{Omit: "signatures", RequireObject: true}
				}
				got, err := jcs.AppendCanonical(nil, v.Input, opt)
				if err != nil {
					t.Fatalf("AppendCanonical(%s) error: %v", v.Input, err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("AppendCanonical(%s) =\n%s\nwant\n%s", v.Input, got, want)
				}
			case "MUST-REJECT":
				rejected++
				if v.InputRaw == nil {
					t.Fatal("reject vector without input_raw")
				}
				in := []byte(*v.InputRaw)
				wantErr, ok := tckRejects[v.ID]
				if !ok {
					t.Fatalf("reject vector %s has no entry in tckRejects", v.ID)
				}
				got, err := jcs.Transform(in)
				if wantErr == nil {
					if err != nil || !bytes.Equal(got, in) {
						t.Errorf("Transform(%s) = %s, %v; want the input unchanged", in, got, err)
					}
					return
				}
				var se *jcs.SyntaxError
				if !errors.Is(err, wantErr) || !errors.As(err, &se) {
					t.Errorf("Transform(%s) = %s, %v; want a *SyntaxError wrapping %v", in, got, err, wantErr)
				}
			default:
				t.Fatalf("unknown disposition %q", v.Disposition)
			}
		})
	}
	if accepted != 47 || rejected != 10 {
		t.Errorf("ran %d accept and %d reject vectors, want 47 and 10", accepted, rejected)
	}
}

// TestCardSigningVectors runs the TCK's agent-card signing payloads: the
// canonical form of the card without its top-level signatures.
func TestCardSigningVectors(t *testing.T) {
	cases := jcstest.SigningCases(t, "testdata")
	if len(cases) != 3 {
		t.Errorf("found %d cases, want 3", len(cases))
	}
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			got, err := jcs.AppendCanonical(nil, c.Card, jcs.Options{Omit: "signatures", RequireObject: true})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.Expected {
				t.Errorf("canonical payload =\n%s\nwant\n%s", got, c.Expected)
			}
		})
	}
}

// TestSpecDefaultValueRemoval documents how pure RFC 8785 differs from the
// example in A2A v1.0.1 §8.4.1: the specification's expected payload drops
// the default-valued "extensions": [] from capabilities (A2A's own signing
// rule 1, still disputed in a2aproject/A2A#2122), which RFC 8785 does not do.
// carddrift digests the card as served, so we keep it; the difference is
// exactly that one member.
func TestSpecDefaultValueRemoval(t *testing.T) {
	in := jcstest.ReadFile(t, "testdata/a2a-spec/spec-v1.0.1-sec8.4.1-default-value-removal.input.json")
	specForm := string(jcstest.ReadFile(t, "testdata/a2a-spec/spec-v1.0.1-sec8.4.1-default-value-removal.expected.json"))
	got, err := jcs.Transform(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"capabilities":{"extensions":[],"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}`
	if string(got) != want {
		t.Errorf("Transform(spec example) =\n%s\nwant\n%s", got, want)
	}
	if stripped := strings.Replace(string(got), `"extensions":[],`, "", 1); stripped != specForm {
		t.Errorf("pure JCS without the default extensions =\n%s\nspec form\n%s", stripped, specForm)
	}
}

// TestCardsAgainstGowebpki cross-checks every real card against an
// independent implementation.
func TestCardsAgainstGowebpki(t *testing.T) {
	for _, path := range globN(t, "../testdata/cards/*.json", 34) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			in := jcstest.ReadFile(t, path)
			got, err := jcs.Transform(in)
			want, wantErr := gowebpki.Transform(in)
			if err != nil || wantErr != nil {
				t.Fatalf("Transform errors: carddrift %v, gowebpki %v", err, wantErr)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Transform(%s) =\n%s\ngowebpki\n%s", name, got, want)
			}
		})
	}
	a, _ := jcs.Transform(jcstest.ReadFile(t, "../testdata/cards/006-docs-v0.3.0-extensions-magic-8-ball.json"))
	b, _ := jcs.Transform(jcstest.ReadFile(t, "../testdata/cards/007-docs-v1.0.1-extensions-magic-8-ball.json"))
	if !bytes.Equal(a, b) {
		t.Errorf("cards 006 and 007 differ only in whitespace but canonicalize differently:\n%s\n%s", a, b)
	}
}

// TestFixturesIntact checks the test data against the manifests that came
// with it, using nothing outside the repository: every TCK vector has the
// SHA-256 that a2a-jcs-v01/MANIFEST.json records (and the directory holds no
// vector the manifest does not list), and the cards directory holds exactly
// the cards that ../testdata/cards/MANIFEST.tsv lists.
func TestFixturesIntact(t *testing.T) {
	var manifest struct {
		Counts struct {
			Total int `json:"total"`
		} `json:"counts"`
		Vectors []struct {
			Path   string `json:"path"`
			SHA256 string `json:"sha256"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(jcstest.ReadFile(t, "testdata/a2a-jcs-v01/MANIFEST.json"), &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest.Vectors) != manifest.Counts.Total || len(manifest.Vectors) != 57 {
		t.Errorf("MANIFEST.json lists %d vectors, counts.total %d, want 57", len(manifest.Vectors), manifest.Counts.Total)
	}
	listed := map[string]bool{}
	for _, v := range manifest.Vectors {
		listed[v.Path] = true
		sum := sha256.Sum256(jcstest.ReadFile(t, filepath.Join("testdata/a2a-jcs-v01", v.Path)))
		if got := hex.EncodeToString(sum[:]); got != v.SHA256 {
			t.Errorf("%s: sha256 %s, MANIFEST.json says %s", v.Path, got, v.SHA256)
		}
	}
	for _, path := range glob(t, "testdata/a2a-jcs-v01/*/*.json") {
		rel, _ := filepath.Rel("testdata/a2a-jcs-v01", path)
		if !listed[filepath.ToSlash(rel)] {
			t.Errorf("%s: not listed in MANIFEST.json", rel)
		}
	}

	rows := strings.Split(strings.TrimSpace(string(jcstest.ReadFile(t, "../testdata/cards/MANIFEST.tsv"))), "\n")
	inManifest := map[string]bool{}
	for _, row := range rows[1:] {
		name, _, _ := strings.Cut(row, "\t")
		inManifest[name] = true
		if _, err := os.Stat(filepath.Join("../testdata/cards", name)); err != nil {
			t.Errorf("MANIFEST.tsv lists %s: %v", name, err)
		}
	}
	if len(inManifest) != 34 {
		t.Errorf("MANIFEST.tsv lists %d cards, want 34", len(inManifest))
	}
	for _, path := range glob(t, "../testdata/cards/*.json") {
		if !inManifest[filepath.Base(path)] {
			t.Errorf("%s: not listed in MANIFEST.tsv (no provenance or licence)", filepath.Base(path))
		}
	}
}

// addSeeds seeds a fuzz target with every real card and every vector input
// in testdata and ../testdata/cards (the committed corpus under testdata/fuzz
// adds a few more).
func addSeeds(f *testing.F) {
	f.Helper()
	for _, pattern := range []string{"../testdata/cards/*.json", "testdata/cyberphone/input/*.json", "testdata/a2a-spec/*.json"} {
		files, _ := filepath.Glob(pattern)
		for _, path := range files {
			b, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	files, _ := filepath.Glob("testdata/a2a-jcs-v01/*/*.json")
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		var v struct {
			Input    json.RawMessage `json:"input"`
			InputRaw string          `json:"input_raw"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			f.Fatal(err)
		}
		if v.InputRaw != "" {
			f.Add([]byte(v.InputRaw))
		} else {
			f.Add([]byte(v.Input))
		}
	}
}

var sentinels = []error{jcs.ErrNotJSON, jcs.ErrDuplicateKey, jcs.ErrInvalidUTF8, jcs.ErrTooLarge, jcs.ErrTooDeep}

// FuzzParse checks that Parse never panics, fails only with a typed error,
// accepts only what encoding/json also finds valid, agrees with a bare
// Scanner, and that what it accepts canonicalizes to a form that parses back
// to the same form.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jcs.Parse(data, jcs.Limits{})
		if err != nil {
			var se *jcs.SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(data) {
				t.Fatalf("Parse error %v (%T) is not a *SyntaxError with an offset in the input", err, err)
			}
			known := false
			for _, s := range sentinels {
				known = known || se.Err == s
			}
			if !known {
				t.Fatalf("Parse error wraps %v, not a sentinel", se.Err)
			}
			if errors.Is(err, jcs.ErrNotJSON) && json.Valid(data) && !hasOutOfRangeNumber(data) {
				t.Fatalf("Parse(%q) = %v, but encoding/json finds it valid", data, err)
			}
			var ce *jcs.SyntaxError
			if _, cerr := jcs.AppendCanonical(nil, data, jcs.Options{}); !errors.As(cerr, &ce) || *ce != *se {
				t.Fatalf("AppendCanonical(%q) error = %v, Parse error = %v", data, cerr, err)
			}
			// A Scanner finds the same problem, unless it is a number
			// outside the float64 range, which only RFC 8785 refuses.
			var we *jcs.SyntaxError
			if werr := walk(data, jcs.Limits{}); !errors.As(werr, &we) || *we != *se {
				if c := data[se.Offset]; se.Err != jcs.ErrNotJSON || c != '-' && (c < '0' || c > '9') {
					t.Fatalf("Scanner(%q) error = %v, Parse error = %v", data, werr, err)
				}
			}
			return
		}
		if werr := walk(data, jcs.Limits{}); werr != nil {
			t.Fatalf("Scanner(%q) = %v, Parse accepts it", data, werr)
		}
		if !json.Valid(data) {
			t.Fatalf("Parse(%q) accepted what encoding/json rejects", data)
		}
		c := jcs.Append(nil, &v)
		w, err := jcs.Parse(c, jcs.Limits{MaxBytes: 4 * len(c)})
		if err != nil {
			t.Fatalf("canonical form %q does not parse: %v", c, err)
		}
		if c2 := jcs.Append(nil, &w); !bytes.Equal(c, c2) {
			t.Fatalf("canonical form is not stable: %q then %q", c, c2)
		}
		if fast, err := jcs.AppendCanonical(nil, data, jcs.Options{}); err != nil || !bytes.Equal(fast, c) {
			t.Fatalf("AppendCanonical = %q, %v; Parse+Append = %q", fast, err, c)
		}
	})
}

// hasOutOfRangeNumber reports whether valid JSON data holds a number that
// float64 cannot represent (encoding/json accepts those, RFC 8785 cannot).
func hasOutOfRangeNumber(data []byte) bool {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if n, ok := tok.(json.Number); ok {
			if _, err := strconv.ParseFloat(string(n), 64); err != nil {
				return true
			}
		}
	}
}

// FuzzTransform checks that Transform is idempotent (the canonical form of a
// canonical form is itself) and agrees with github.com/gowebpki/jcs whenever
// both accept the input.
func FuzzTransform(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := jcs.Transform(data)
		want, wantErr := gowebpki.Transform(data)
		if err != nil {
			if wantErr == nil && !errors.Is(err, jcs.ErrTooDeep) && !errors.Is(err, jcs.ErrTooLarge) {
				t.Fatalf("Transform(%q) = %v, but gowebpki accepts it as %q", data, err, want)
			}
			return
		}
		again, err := jcs.Transform(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("Transform(Transform(%q)) = %q, %v; want %q", data, again, err, got)
		}
		if wantErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("Transform(%q) = %q, gowebpki %q", data, got, want)
		}
	})
}
