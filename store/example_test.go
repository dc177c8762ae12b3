package store_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
)

func ExampleEncodeKey() {
	for _, id := range []string{"task-1", "a.b.*", ""} {
		key := store.EncodeKey(id)
		back, _ := store.DecodeKey(key)
		fmt.Printf("%q -> %q -> %q\n", id, key, back)
	}
	// Output:
	// "task-1" -> "dGFzay0x" -> "task-1"
	// "a.b.*" -> "YS5iLio" -> "a.b.*"
	// "" -> "=" -> ""
}

func ExampleConfig_LifecycleConsumer() {
	cfg := store.DefaultConfig()
	cfg.Partitions = 4
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	for _, cc := range cfg.LifecycleConsumers() {
		fmt.Println(cc.Durable, cc.FilterSubject, cc.AckWait, cc.MaxDeliver)
	}
	// Output:
	// carddrift-worker-p0 a2a.task.*.*.0 30s -1
	// carddrift-worker-p1 a2a.task.*.*.1 30s -1
	// carddrift-worker-p2 a2a.task.*.*.2 30s -1
	// carddrift-worker-p3 a2a.task.*.*.3 30s -1
}

func ExampleConfig_Validate() {
	cfg := store.DefaultConfig()
	cfg.PinsBucket = "carddrift.pins"
	var ce *store.ConfigError
	if err := cfg.Validate(); errors.As(err, &ce) {
		fmt.Println(ce.Field, "-", ce.Reason)
	}
	// Output:
	// PinsBucket - must be letters, digits, '-' or '_'
}

func ExampleCachedPins() {
	ctx := context.Background()
	pins := store.NewCachedPins(memstore.NewPins[testRecord](), 1000)

	rev, _ := pins.Create(ctx, testPin("task-1", 1))
	pin, got, _ := pins.Get(ctx, "task-1") // served from the cache
	fmt.Println(pin.TaskID, got == rev)

	// Compare-and-set: an update at a stale revision conflicts.
	newRev, _ := pins.Update(ctx, pin, rev)
	_, err := pins.Update(ctx, pin, rev)
	fmt.Println(newRev > rev, errors.Is(err, store.ErrConflict))
	fmt.Println("hits:", pins.Stats().Hits)
	// Output:
	// task-1 true
	// true true
	// hits: 1
}
