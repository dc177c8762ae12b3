package events_test

import (
	"strings"
	"testing"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/store/topology"
)

func defaultTopology() topology.Topology {
	var t topology.Topology
	t.SetDefaults()
	return t
}

// The default topology's streams take every event the contract publishes:
// each event's Subject is covered by the stream of its direction, lifecycle
// or outbound, and by no other, partitioned or not.
func TestTopologyDefaultsCoverSubjects(t *testing.T) {
	for _, partitions := range []int{0, 4} {
		top := defaultTopology()
		top.Partitions = partitions
		if err := top.Validate(); err != nil {
			t.Fatalf("default topology (partitions %d): Validate() = %v", partitions, err)
		}
		if top.LifecycleSubjects != events.InboundSubjects || top.EventsSubjects != events.OutboundSubjects {
			t.Errorf("default topology subjects %s, %s, want the contract's %s, %s",
				top.LifecycleSubjects, top.EventsSubjects, events.InboundSubjects, events.OutboundSubjects)
		}
		streams := top.DeclaredStreams()
		for _, d := range samples() {
			subj, err := events.Subject(d)
			if err != nil {
				t.Fatalf("Subject(%T) = %v", d, err)
			}
			want := top.EventsStream
			if strings.HasPrefix(d.EventType(), "a2a.task.") {
				want = top.LifecycleStream
			}
			var got []string
			for _, sc := range streams {
				for _, filter := range sc.Subjects {
					if subjectMatches(filter, subj) {
						got = append(got, sc.Name)
					}
				}
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("partitions %d: %s (%s) is stored by %v, want [%s]", partitions, subj, d.EventType(), got, want)
			}
		}
	}
}

// subjectMatches reports whether a NATS subject filter (tokens, '*', a
// final '>') matches subject.
func subjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s):
			return false
		case tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(f) == len(s)
}
