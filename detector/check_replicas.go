package detector

import (
	"slices"
	"time"
)

// CheckReplicas returns a replicas-disagree finding when digests, those the
// agent served within window (in any order), hold at least two: replicas
// behind one agent URL serve different cards at once (Replicas decides when).
// It is task-level: the shell adds it to a task's evaluation while the
// episode lasts; as a warning it never changes a verdict's action.
func CheckReplicas(digests []string, window time.Duration) (Finding, bool) {
	ds := slices.Clone(digests)
	slices.Sort(ds)
	ds = slices.Compact(ds)
	if len(ds) < 2 {
		return Finding{}, false
	}
	return Finding{
		Rule: RuleReplicasDisagree, Severity: Warning, Path: "", Before: nil, After: ds,
		Message: render(RuleReplicasDisagree, "digests", quoteList(ds), "window", window.String()),
	}, true
}
