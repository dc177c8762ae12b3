package detector

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. It must never panic; a rejection
// must carry one of the documented typed errors; an accepted card must be
// internally consistent (skills sorted and indexed, digests computable) and
// parse to the same fingerprint twice.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{fixtureCards, filepath.Join("testdata", "forms")} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			if raw, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				f.Add(raw)
			}
		}
	}
	f.Add([]byte(`{"name":"a","skills":[{"id":"b"},{"id":"a"}],"securityRequirements":[{"schemes":{"x":{"list":["s"]}}}]}`))
	f.Add([]byte(`{"name":"a","authentication":{"schemes":["Bearer","public"]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Parse(raw)
		if err != nil {
			typed := []error{ErrNotJSON, ErrNotObject, ErrDuplicateKey, ErrInvalidUTF8, ErrTooLarge, ErrTooDeep}
			for _, want := range typed {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("Parse error %v (%T) is none of the typed errors", err, err)
		}
		for i := 1; i < len(c.Skills); i++ {
			if c.Skills[i-1].ID >= c.Skills[i].ID {
				t.Fatalf("skills not sorted by unique id: %q, %q", c.Skills[i-1].ID, c.Skills[i].ID)
			}
		}
		for _, s := range c.Skills {
			if got, ok := c.Skill(s.ID); !ok || got.ID != s.ID {
				t.Fatalf("Skill(%q) not found", s.ID)
			}
		}
		if c.Name == "" && c.URL() == "" && !slices.ContainsFunc(c.Conformance, func(n Nonconformance) bool { return n.Path == "" }) {
			t.Fatalf("a card with no identity is not noted as nonconformant: %v", c.Conformance)
		}
		if _, err := Digest(raw); err != nil {
			t.Fatalf("Digest of an accepted card: %v", err)
		}
		again, err := Parse(raw)
		if err != nil || Fingerprint(again) != Fingerprint(c) || StructuralDigest(again) != StructuralDigest(c) {
			t.Fatalf("Parse is not deterministic: %v", err)
		}
		if len(Diff(c, again)) != 0 {
			t.Fatalf("Diff of a card with itself: %v", Diff(c, again))
		}
	})
}
