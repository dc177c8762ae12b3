package topology_test

import (
	"errors"
	"hash/fnv"
	"testing"

	"github.com/carddrift/carddrift/store/topology"
)

func defaultTopology() topology.Topology {
	var t topology.Topology
	t.SetDefaults()
	return t
}

func TestTopologyPlacementIsTheProvisioners(t *testing.T) {
	top := defaultTopology()
	top.Partitions = 2
	top.EventsMaxBytes = 5 << 20
	cc := top.DeclaredConsumer(1)
	if cc.Durable != "carddrift-worker-p1" || cc.FilterSubject != "a2a.task.*.*.1" || cc.MaxDeliver != -1 {
		t.Errorf("DeclaredConsumer(1) = durable %q filter %q max deliver %d, want carddrift-worker-p1 a2a.task.*.*.1 -1",
			cc.Durable, cc.FilterSubject, cc.MaxDeliver)
	}
	if cc.Replicas != 0 || cc.MemoryStorage {
		t.Errorf("DeclaredConsumer(1) placed: replicas %d memory %v, want none", cc.Replicas, cc.MemoryStorage)
	}
	sc := top.DeclaredStreams()
	if len(sc) != 3 || sc[0].Name != "A2A_TASKS" || sc[1].Name != "CARD_EVENTS" || sc[2].Name != "CARDDRIFT_DLQ" {
		t.Fatalf("DeclaredStreams() = %d streams %+v, want A2A_TASKS, CARD_EVENTS, CARDDRIFT_DLQ", len(sc), sc)
	}
	if sc[0].MaxBytes != 0 || sc[1].MaxBytes != 5<<20 || sc[0].Replicas != 0 {
		t.Errorf("DeclaredStreams() max bytes %d %d replicas %d, want 0 (the provisioner's), 5MiB as set, 0", sc[0].MaxBytes, sc[1].MaxBytes, sc[0].Replicas)
	}
	if sc[0].SubjectTransform == nil || sc[0].SubjectTransform.Destination != "a2a.task.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(2,2)}}" {
		t.Errorf("DeclaredStreams()[0].SubjectTransform = %+v, want the partition(2,2) transform", sc[0].SubjectTransform)
	}
}

func TestTopologyValidate(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(*topology.Topology)
	}{
		{"DLQStream", func(t *topology.Topology) { t.DLQStream = t.LifecycleStream }},
		{"EventsStream", func(t *topology.Topology) { t.EventsStream = "KV_x" }},
		{"EventsSubjects", func(t *topology.Topology) { t.EventsSubjects = "a2a.task.x.>" }},
		{"Partitions", func(t *topology.Topology) { t.Partitions = topology.MaxPartitions + 1 }},
		{"ConsumerName", func(t *topology.Topology) { t.ConsumerName = "a.b" }},
	} {
		top := defaultTopology()
		tc.edit(&top)
		var ce *topology.ConfigError
		if err := top.Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Validate() with a bad %s = %v, want a *ConfigError on it", tc.field, err)
		}
	}
}

func TestPartitionOf(t *testing.T) {
	top := defaultTopology()
	top.Partitions = 8
	for _, tok := range []string{"task-1", "dGFzay0x", "x"} {
		h := fnv.New32a()
		h.Write([]byte(tok))
		want := int(h.Sum32() % 8)
		if got := top.PartitionOf(tok); got != want {
			t.Fatalf("PartitionOf(%q) = %d, want %d", tok, got, want)
		}
	}
	top.Partitions = 0
	if got := top.PartitionOf("task-1"); got != 0 {
		t.Fatalf("PartitionOf() without partitions = %d, want 0", got)
	}
}
