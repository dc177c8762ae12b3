package jcstest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TCKCount is the number of vectors in the a2a-jcs-v01 corpus: 47 that a
// canonicalizer must accept and 10 that it must reject.
const TCKCount = 57

// TCKVector is one file of the corpus: must-accept vectors embed the input
// verbatim, must-reject ones carry it as a JSON string.
type TCKVector struct {
	ID          string          `json:"id"`
	Disposition string          `json:"disposition"` // "MUST-ACCEPT" or "MUST-REJECT"
	Input       json.RawMessage `json:"input"`
	InputRaw    *string         `json:"input_raw"`
	Expected    struct {
		CanonicalUTF8Hex string `json:"canonical_utf8_hex"`
	} `json:"expected"`
}

// TCK returns every vector under dir, in file name order (all TCKCount).
func TCK(t testing.TB, dir string) []TCKVector {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "a2a-jcs-v01/*/*.json"))
	if err != nil || len(paths) != TCKCount {
		t.Fatalf("found %d TCK vectors under %s (%v), want %d", len(paths), dir, err, TCKCount)
	}
	vs := make([]TCKVector, len(paths))
	for i, path := range paths {
		if err := json.Unmarshal(ReadFile(t, path), &vs[i]); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return vs
}

// SigningCase is a TCK card-signing payload: Expected is Card's canonical
// form without signatures.
type SigningCase struct {
	ID       string          `json:"id"`
	Card     json.RawMessage `json:"agent_card"`
	Expected string          `json:"expected_jcs_payload"`
}

func SigningCases(t testing.TB, dir string) []SigningCase {
	t.Helper()
	var file struct {
		Cases []SigningCase `json:"cases"`
	}
	path := filepath.Join(dir, "card_signing_canonicalization_vectors.json")
	if err := json.Unmarshal(ReadFile(t, path), &file); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return file.Cases
}

// ReadFile reads path or fails t.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
