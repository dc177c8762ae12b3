package detector

import (
	"slices"
	"time"
)

// CheckReplicas returns a replicas-disagree finding when the digests the
// agent served within window hold two or more (Replicas decides when).
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
