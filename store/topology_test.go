package store_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store"
)

func TestLifecycleConsumer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		partitions int
		p          int
		wantName   string
		wantFilter string
	}{
		{"unpartitioned", 0, 0, "carddrift-worker", "a2a.task.>"},
		{"first", 4, 0, "carddrift-worker-p0", "a2a.task.*.*.0"},
		{"last", 4, 3, "carddrift-worker-p3", "a2a.task.*.*.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := store.DefaultConfig()
			c.Partitions = tc.partitions
			cc := c.LifecycleConsumer(tc.p)
			if cc.Durable != tc.wantName || cc.Name != tc.wantName {
				t.Fatalf("LifecycleConsumer(%d).Durable = %q, want %q", tc.p, cc.Durable, tc.wantName)
			}
			if cc.FilterSubject != tc.wantFilter {
				t.Fatalf("LifecycleConsumer(%d).FilterSubject = %q, want %q", tc.p, cc.FilterSubject, tc.wantFilter)
			}
			if cc.AckPolicy != jetstream.AckExplicitPolicy {
				t.Fatalf("LifecycleConsumer(%d).AckPolicy = %v, want explicit", tc.p, cc.AckPolicy)
			}
			if cc.AckWait != 30*time.Second || cc.MaxDeliver != -1 || cc.MaxAckPending != 1000 {
				t.Fatalf("LifecycleConsumer(%d) = AckWait %v MaxDeliver %d MaxAckPending %d, want 30s -1 1000",
					tc.p, cc.AckWait, cc.MaxDeliver, cc.MaxAckPending)
			}
		})
	}
	t.Run("out-of-range-panics", func(t *testing.T) {
		c := store.DefaultConfig()
		c.Partitions = 2
		defer func() {
			if recover() == nil {
				t.Fatalf("LifecycleConsumer(2) of 2 partitions did not panic")
			}
		}()
		c.LifecycleConsumer(2)
	})
	t.Run("placed", func(t *testing.T) {
		c := store.DefaultConfig()
		c.Replicas = 3
		c.Storage = jetstream.MemoryStorage
		if cc := c.LifecycleConsumer(0); cc.Replicas != 3 || !cc.MemoryStorage {
			t.Fatalf("LifecycleConsumer(0) = replicas %d memory %v, want the Config's 3, memory", cc.Replicas, cc.MemoryStorage)
		}
	})
	t.Run("all", func(t *testing.T) {
		c := store.DefaultConfig()
		c.Partitions = 3
		if got := len(c.LifecycleConsumers()); got != 3 {
			t.Fatalf("len(LifecycleConsumers()) = %d, want 3", got)
		}
	})
}
