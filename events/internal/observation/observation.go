package observation

import (
	"time"

	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store/fetcher"
)

// Of is the core's view of a fetcher observation at now, with the digests
// served within the lease's consistency window and, while replicas
// disagree (detector.Replicas at now), theirs.
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
