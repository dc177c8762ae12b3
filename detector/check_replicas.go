package detector

import (
	"slices"
	"time"
)

// CheckReplicas returns a replicas-disagree finding (warning, touching every
// task on the agent) when replicas behind one agent URL serve different
// cards at once: the live card alternated between digests within the
// consistency window (split brain; the fetcher keeps that window on the
// shared lease, Replicas decides). digests are the digests the agent
// served within window, in any order; fewer than two say nothing.
//
// It is a task-level rule: the finding comes from the agent's recent
// observations, not from comparing two cards, and the shell adds it to a
// task's evaluation while the episode lasts. A warning never changes a
// verdict's action; it names the cause of drift that comes and goes.
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
