package replay

import (
	"fmt"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// Story sums up one task of a timeline: which card it was planned against,
// which card was live when it failed, and what changed in between.
type Story struct {
	TaskID   string `json:"taskId"`
	AgentURL string `json:"agentUrl"`
	// Requirements are those of the task's last submission before Moment
	// (nil if the submission is not in the timeline).
	Requirements *detector.Requirements `json:"requirements,omitempty"`
	// Planned is the digest of the card the task was planned against at
	// Moment: the pinned side of the verdict, else the task's last pin.
	// PinSource says how the pin was made (client-card, client-digest,
	// first-fetch) and PinnedAt when.
	Planned   string `json:"planned,omitempty"`
	PinSource string `json:"pinSource,omitempty"`
	// PinExtended is the pin's card.pinned extended state, for a task that
	// uses the extended card: "pinned" (Planned is the extended card) or
	// "unavailable" (the public card).
	PinExtended string    `json:"pinExtended,omitempty"`
	PinnedAt    time.Time `json:"pinnedAt,omitzero"`
	// Moment is the decisive event: the first abort verdict; else the first
	// failed or rejected status or schema-class error; else the first
	// re-plan verdict; else the last verdict. Nil when the task met none.
	Moment *Moment `json:"moment,omitempty"`
	// Live is the card the agent served at Moment (the verdict's live card,
	// else the last observation at or before it, else the first one after),
	// or at the end of the timeline without a Moment; LiveAt when it was
	// fetched.
	Live   string    `json:"live,omitempty"`
	LiveAt time.Time `json:"liveAt,omitzero"`
	// Change is what changed from Planned to Live (nil when they are equal
	// or one is unknown).
	Change *Change `json:"change,omitempty"`
	// Verdicts counts the task's verdicts by action.
	Verdicts VerdictCounts `json:"verdicts"`
	// State is the last status the client reported ("" if none).
	State string `json:"state,omitempty"`
}

// Moment is the decisive event of a Story.
type Moment struct {
	Time time.Time `json:"time"`
	Type string    `json:"type"`
	// Action is the verdict's action ("" for a lifecycle event).
	Action detector.Action `json:"action,omitempty"`
	// What says what happened, in words.
	What string `json:"what"`
}

// VerdictCounts counts a task's verdicts by action (detector.Counts, the
// one type of it).
type VerdictCounts = detector.Counts

// failing reports whether a lifecycle event shows the task failing.
func failing(d events.Data) (string, bool) {
	switch d := d.(type) {
	case events.Status:
		if st, _ := detector.NormalizeState(d.State); st == detector.StateFailed || st == detector.StateRejected {
			return "status " + d.State, true
		}
	case events.Error:
		if detector.IsSchemaClassError(d.Code) {
			return fmt.Sprintf("error %d %s on %s: %s", d.Code, detector.ErrorName(d.Code), d.Method, d.Message), true
		}
	}
	return "", false
}
