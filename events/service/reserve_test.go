package service_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/service"
	"github.com/carddrift/carddrift/events/service/servicetest"
	"github.com/carddrift/carddrift/events/worker"
	"github.com/carddrift/carddrift/store"
)

// The embedded server lets carddrift's streams reserve their byte limits
// whatever the disk holds: nats-server's own default maximum is 75% of the
// disk free at start, so a machine with less free disk than the limits
// (here: limits larger than any disk) could not start serve. The streams
// hold only what is written; the limits are what they may grow to.
func TestEmbeddedReservesTheLimits(t *testing.T) {
	ctx := context.Background()
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		cfg := store.DefaultConfig()
		cfg.Partitions = 1
		cfg.Storage = storage
		cfg.StorageLimit = 64 << 40 // 64 TiB
		svc, err := service.Open(ctx, service.Options{DataDir: t.TempDir(), Config: cfg,
			Worker: worker.Options{Name: "reserve", Fetch: servicetest.LoopbackFetch()}})
		if err != nil {
			t.Fatalf("%v storage, limits of 64 TiB: Open() = %v", storage, err)
		}
		info, err := svc.JetStream().Stream(ctx, cfg.LifecycleStream)
		if err != nil {
			t.Fatal(err)
		}
		scfg := svc.Config()
		if got, want := info.CachedInfo().Config.MaxBytes, scfg.Limits()[cfg.LifecycleStream]; got != want {
			t.Errorf("%v storage: %s MaxBytes = %d, want %d", storage, cfg.LifecycleStream, got, want)
		}
		svc.Close()
	}
}
