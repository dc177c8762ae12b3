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
	return newFinding(RuleReplicasDisagree, "", Warning, "", nil, ds, "digests", quoteList(ds), "window", window.String()), true
}
