package jcs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	gowebpki "github.com/gowebpki/jcs"

	"github.com/carddrift/carddrift/detector/jcs"
)

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
