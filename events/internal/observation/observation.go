package observation

import (
	"time"

	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Of is the core's view of a fetcher observation at now: the observation
// itself (detector.Observation, shared, not copied field by field), and the
// digests the agent served within the lease's consistency window (Seen), with those of its replicas while they disagree
// (split brain, as detector.Replicas decides at now).
func Of(o fetcher.Observation, now time.Time) task.Observation {
	to := o.Observation
	window := o.Replicas.Window(now, o.Window)
	to.Seen = append(to.Seen, window...)
	if o.Replicas.Disagree(now, o.Window) {
		for _, s := range window {
			to.Disagreeing = append(to.Disagreeing, s.Digest)
		}
	}
	return to
}
