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

// TCKVector is one file of the a2a-jcs-v01 corpus. Must-accept vectors carry
// the input as embedded JSON (taken verbatim, as written in the file) and
// the expected canonical bytes in hex; must-reject vectors carry the input
// as a JSON string.
type TCKVector struct {
	ID          string          `json:"id"`
	Disposition string          `json:"disposition"` // "MUST-ACCEPT" or "MUST-REJECT"
	Input       json.RawMessage `json:"input"`
	InputRaw    *string         `json:"input_raw"`
	Expected    struct {
		CanonicalUTF8Hex string `json:"canonical_utf8_hex"`
	} `json:"expected"`
}

// TCK returns every vector of the corpus under dir, in file name order. It
// fails t unless it finds all TCKCount.
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

// SigningCase is one of the TCK's agent-card signing payloads: Expected is
// the canonical form of Card without its top-level signatures.
type SigningCase struct {
	ID       string          `json:"id"`
	Card     json.RawMessage `json:"agent_card"`
	Expected string          `json:"expected_jcs_payload"`
}

// SigningCases returns the card-signing payloads under dir.
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

// ReadFile returns the content of the file at path, failing t if it cannot
// be read.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
