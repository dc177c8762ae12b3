package storetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/store"
)

// IDs are the awkward ids every keyed store must keep apart and
// round-trip, by kind.
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

// Record is the pin-like record the conformance suites store: the kinds of
// field a task's pin has.
type Record struct {
	TaskID          string       `json:"taskId"`
	AgentURL        string       `json:"agentUrl"`
	CardURL         string       `json:"cardUrl,omitempty"`
	Digest          string       `json:"digest"`
	Fingerprint     string       `json:"fingerprint,omitempty"`
	ProtocolVersion string       `json:"protocolVersion,omitempty"`
	CardVersion     string       `json:"cardVersion,omitempty"`
	ETag            string       `json:"etag,omitempty"`
	PinnedAt        time.Time    `json:"pinnedAt"`
	Source          string       `json:"source"`
	Requirements    Requirements `json:"requirements"`
	Reported        []string     `json:"reported,omitempty"`
}

// Requirements are nested slices and a map, as a task's requirements are.
type Requirements struct {
	SkillID     string              `json:"skillId,omitempty"`
	Streaming   bool                `json:"streaming,omitempty"`
	InputModes  []string            `json:"inputModes,omitempty"`
	OutputModes []string            `json:"outputModes,omitempty"`
	Security    []string            `json:"security,omitempty"`
	Scopes      map[string][]string `json:"scopes,omitempty"`
	Posture     string              `json:"posture,omitempty"`
	Idempotent  bool                `json:"idempotent,omitempty"`
}

// Key implements store.Record.
func (r Record) Key() string { return r.TaskID }

// Clone implements store.Record.
func (r Record) Clone() Record {
	q := &r.Requirements
	q.InputModes = slices.Clone(q.InputModes)
	q.OutputModes = slices.Clone(q.OutputModes)
	q.Security = slices.Clone(q.Security)
	if q.Scopes != nil {
		m := make(map[string][]string, len(q.Scopes))
		for k, v := range q.Scopes {
			m[k] = slices.Clone(v)
		}
		q.Scopes = m
	}
	r.Reported = slices.Clone(r.Reported)
	return r
}

// Pin returns a record for taskID with every commonly used field set; n
// makes records of the same task differ.
func Pin(taskID string, n int) Record {
	return Record{
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
		Requirements: Requirements{
			SkillID:     "summarize",
			Streaming:   n%2 == 0,
			InputModes:  []string{"text/plain", "application/json"},
			OutputModes: []string{"text/plain"},
			Security:    []string{"oauth"},
			Scopes:      map[string][]string{"oauth": {"read"}},
			Posture:     "degrade",
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

// jsonOf renders v for comparisons.
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
