package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/carddrift/carddrift/events"
)

// Query selects history. Zero fields select everything; set fields combine
// (a task of an agent within a window).
type Query struct {
	// TaskID selects one task: its lifecycle events, pins, verdicts and
	// unreachable fetches, and the observations of its agent's card while it
	// ran.
	TaskID string `json:"taskId,omitempty"`
	// AgentURL selects one agent: every event whose agent URL has the same
	// host (events.AgentKey), and the lifecycle events of its tasks.
	AgentURL string `json:"agentUrl,omitempty"`
	// Since and Until bound the entries' times (inclusive); zero means
	// unbounded.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// agentKey returns the subject token of q.AgentURL, "" without one.
func (q Query) agentKey() (string, error) {
	if q.AgentURL == "" {
		return "", nil
	}
	key, err := events.AgentKey(q.AgentURL)
	if err != nil {
		return "", fmt.Errorf("%w: agent: %w", ErrInvalidQuery, err)
	}
	return key, nil
}

func (q Query) validate() error {
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since) {
		return fmt.Errorf("%w: until %s is before since %s", ErrInvalidQuery,
			q.Until.Format(time.RFC3339), q.Since.Format(time.RFC3339))
	}
	_, err := q.agentKey()
	return err
}

// inWindow reports whether t is within [Since, Until].
func (q Query) inWindow(t time.Time) bool {
	return (q.Since.IsZero() || !t.Before(q.Since)) && (q.Until.IsZero() || !t.After(q.Until))
}

// ParseTime reads a point in time for Query.Since or Until: an RFC 3339
// timestamp ("2026-03-01T10:00:00Z", fractional seconds allowed), or a Go
// duration meaning that long before now ("15m", "2h30m", "90s"). A leading
// "-" on a duration is accepted and means the same. Errors wrap
// ErrInvalidQuery.
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("%w: empty time", ErrInvalidQuery)
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := time.ParseDuration(strings.TrimPrefix(s, "-"))
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%w: time %q: want RFC 3339 (2026-03-01T10:00:00Z) or a duration ago (15m)", ErrInvalidQuery, s)
	}
	return now.Add(-d).UTC(), nil
}
