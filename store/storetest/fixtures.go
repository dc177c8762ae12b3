package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/store"
)

// IDs are the awkward ids every keyed store must keep apart and round-trip:
// NATS token separators and wildcards, spaces, KV-reserved characters,
// non-ASCII, control characters, and ids on both sides of
// store.MaxReversibleID.
func IDs() map[string]string {
	return map[string]string{
		"plain":          "task-1",
		"dots":           "a.b.c",
		"dot-edges":      ".a.",
		"double-dot":     "a..b",
		"underscore":     "a_b_c",
		"spaces":         "a b c",
		"star":           "a.*.c",
		"gt":             "a.>",
		"lone-star":      "*",
		"lone-gt":        ">",
		"slash":          "tenant/42/task",
		"equals":         "a=b",
		"dollar":         "$KV.carddrift-pins.x",
		"unicode":        "tâche-日本語-задача",
		"emoji":          "🃏✨",
		"control":        "a\tb\nc\x00d",
		"quote":          `a"b\c`,
		"url":            "https://agent.example.com/.well-known/agent-card.json?x=1&y=*",
		"base64-like":    "dGFzay0x", // base64 of "task-1": must not collide with it
		"empty":          "",
		"max-reversible": strings.Repeat("r", store.MaxReversibleID),
		"hashed":         strings.Repeat("h", store.MaxReversibleID+1),
		"very-long":      strings.Repeat("長", 20000),
	}
}

// Pin returns a pin for taskID with every commonly used field set; n makes
// pins of the same task differ.
func Pin(taskID string, n int) detector.Pin {
	return detector.Pin{
		TaskID:          taskID,
		AgentURL:        "https://agent.example.com",
		CardURL:         "https://agent.example.com/.well-known/agent-card.json",
		Digest:          "sha256:" + strings.Repeat("ab", 32),
		Fingerprint:     "sha256:" + strings.Repeat("cd", 32),
		ProtocolVersion: "0.3.0",
		CardVersion:     "1." + string(rune('0'+n%10)),
		ETag:            `W/"v` + string(rune('0'+n%10)) + `"`,
		PinnedAt:        time.Date(2026, 1, 2, 3, 4, 5, n, time.UTC),
		Source:          "client-card",
		Requirements: detector.Requirements{
			SkillID:     "summarize",
			Streaming:   n%2 == 0,
			InputModes:  []string{"text/plain", "application/json"},
			OutputModes: []string{"text/plain"},
			Security:    []string{"oauth"},
			Posture:     detector.Degrade,
			Idempotent:  true,
		},
	}
}

// Lease returns a lease for cardURL; n makes leases of the same URL differ.
func Lease(cardURL string, n int) store.Lease {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(n) * time.Second)
	return store.Lease{
		CardURL:       cardURL,
		Digest:        "sha256:" + strings.Repeat("ef", 32),
		ETag:          `"e` + string(rune('0'+n%10)) + `"`,
		MaxAge:        time.Duration(n) * time.Second,
		FetchedAt:     at,
		LastFullFetch: at,
	}
}

// jsonOf renders v for comparisons: values stored as JSON compare equal
// exactly when their encodings do.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%T) error = %v", v, err)
	}
	return string(b)
}

// short abbreviates an id in failure messages.
func short(id string) string {
	if len(id) > 40 {
		return id[:40] + "…"
	}
	return id
}
