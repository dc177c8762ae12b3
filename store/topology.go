package store

import (
	"github.com/nats-io/nats.go/jetstream"
)

// The topology — streams, subjects, partitions, consumers — is package
// topology's (topology.Topology, embedded in Config); this file places it:
// the Config's replicas, storage and byte limits on what it declares.

// LifecycleConsumer returns the config of the durable pull consumer that
// workers share for partition p: what the topology declares of it
// (topology.Topology.DeclaredConsumer) with the Config's Replicas and
// Storage. It panics if p is out of range.
func (c *Config) LifecycleConsumer(p int) jetstream.ConsumerConfig {
	cc := c.DeclaredConsumer(p)
	cc.Replicas = c.Replicas
	cc.MemoryStorage = c.Storage == jetstream.MemoryStorage
	return cc
}

// LifecycleConsumers returns LifecycleConsumer of every partition (one
// config without partitions).
func (c *Config) LifecycleConsumers() []jetstream.ConsumerConfig {
	n := max(c.Partitions, 1)
	out := make([]jetstream.ConsumerConfig, n)
	for p := range n {
		out[p] = c.LifecycleConsumer(p)
	}
	return out
}

// streamConfigs returns the three streams' configs of a defaulted cfg: the
// topology's (topology.Topology.DeclaredStreams) with the Config's storage,
// replicas and byte limits in effect.
func (c *Config) streamConfigs() []jetstream.StreamConfig {
	sc := c.DeclaredStreams()
	for i, field := range []string{"LifecycleMaxBytes", "EventsMaxBytes", "DLQMaxBytes"} {
		sc[i].MaxBytes = c.maxBytes(field)
		sc[i].Storage = c.Storage
		sc[i].Replicas = c.Replicas
	}
	return sc
}
