// Package topology names the JetStream streams, subjects, partitions and
// consumers that clients, planners and workers share, with their defaults:
// the lifecycle stream clients publish task events to, the outbound stream
// of card.* events, the dead-letter stream, how the lifecycle stream is
// partitioned (PartitionOf, LifecycleFilter) and the workers' durable
// consumers (DeclaredConsumer). It declares and validates them, and does no
// I/O: store.Config embeds a Topology and places it (replicas, storage,
// byte limits), store.Provision creates the streams, the worker the
// consumers. It stands below both store and events, so that neither
// imports the other for it.
package topology
