package worker

import (
	"strings"

	"github.com/carddrift/carddrift/events"
)

// checkSubject holds a lifecycle event to the subject it was stored on
// (events.CheckStoredSubject: <prefix>.<kind>.<task>, and the partition
// token when the stream is partitioned): the kind must be the event's type
// and the task the data's task id. The partition, the per-task order and
// replay's per-task filter all follow the subject, the pin the data. It
// returns an error wrapping events.ErrSubjectMismatch if they disagree,
// nil for an event that is not a lifecycle event (the handler dead-letters
// those as unexpected-type).
func (w *Worker) checkSubject(subject string, ev events.Event) error {
	switch ev.Data.(type) {
	case events.Submitted, events.Request, events.Status, events.Artifact, events.Error:
	default:
		return nil
	}
	return events.CheckStoredSubject(ev, subject, strings.TrimSuffix(w.cfg.LifecycleSubjects, ">"), w.cfg.Partitions > 0)
}
