package planner

import "github.com/carddrift/carddrift/detector"

// What a card does not satisfy of a task is the detector's decision
// (detector.Unsatisfied): these names keep the planner's API.
type (
	// Unmet is detector.Unmet.
	Unmet = detector.Unmet
	// UnmetKind is detector.UnmetKind.
	UnmetKind = detector.UnmetKind
)

// Kinds of Unmet (see detector).
const (
	UnmetSkill                = detector.UnmetSkill
	UnmetStreaming            = detector.UnmetStreaming
	UnmetPushNotifications    = detector.UnmetPushNotifications
	UnmetInputMode            = detector.UnmetInputMode
	UnmetOutputMode           = detector.UnmetOutputMode
	UnmetSecurityScheme       = detector.UnmetSecurityScheme
	UnmetSecurityRequirements = detector.UnmetSecurityRequirements
	UnmetScope                = detector.UnmetScope
	UnmetExtension            = detector.UnmetExtension
	UnmetExtensionRequired    = detector.UnmetExtensionRequired
	UnmetExtendedCard         = detector.UnmetExtendedCard
)

// Unsatisfied is detector.Unsatisfied: what of req the card does not
// satisfy, nil when it satisfies the task.
func Unsatisfied(card *detector.Card, req detector.Requirements) []Unmet {
	return detector.Unsatisfied(card, req)
}
