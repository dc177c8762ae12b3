package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ReadStream returns the first n messages of a stream, read with an ordered
// consumer within 10 s; it fails the test when fewer arrive.
func ReadStream(t testing.TB, js jetstream.JetStream, stream string, n int) []jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("OrderedConsumer: %v", err)
	}
	var out []jetstream.Msg
	for len(out) < n {
		batch, err := c.Fetch(n-len(out), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		got := 0
		for m := range batch.Messages() {
			out = append(out, m)
			got++
		}
		if err := batch.Error(); err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		if got == 0 {
			t.Fatalf("Fetch: got %d of %d messages", len(out), n)
		}
	}
	return out
}
