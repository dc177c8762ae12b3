package worker

import (
	"fmt"
	"strings"

	"github.com/carddrift/carddrift/events"
)

// checkSubject holds a lifecycle event to the subject it was stored on:
// <prefix>.<kind>.<task>, and the partition token when the stream is
// partitioned (store.Config.Partitions). The kind must be the event's type
// and the task the data's task id (events.CheckSubject): the partition, the
// per-task order and replay's per-task filter all follow the subject, the
// pin the data. It returns an error wrapping events.ErrSubjectMismatch if
// they disagree, nil for an event that is not a lifecycle event (the
// handler dead-letters those as unexpected-type).
func (w *Worker) checkSubject(subject string, ev events.Event) error {
	switch ev.Data.(type) {
	case events.Submitted, events.Request, events.Status, events.Artifact, events.Error:
	default:
		return nil
	}
	rest, ok := strings.CutPrefix(subject, strings.TrimSuffix(w.cfg.LifecycleSubjects, ">"))
	if !ok {
		return fmt.Errorf("%w: subject %q is outside %s", events.ErrSubjectMismatch, subject, w.cfg.LifecycleSubjects)
	}
	kind, rest, _ := strings.Cut(rest, ".")
	task, part, partitioned := strings.Cut(rest, ".")
	if partitioned != (w.cfg.Partitions > 0) || partitioned && !isPartition(part) {
		shape := "<kind>.<task>"
		if w.cfg.Partitions > 0 {
			shape += ".<partition>"
		}
		return fmt.Errorf("%w: subject %q is not %s after %s", events.ErrSubjectMismatch, subject, shape, w.cfg.LifecycleSubjects)
	}
	return events.CheckSubject(ev, kind, task)
}

// isPartition reports whether s is a partition token: a decimal number.
// Which one the stream's transform chose is the server's business (a
// stream repartitioned since keeps its old tokens).
func isPartition(s string) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
