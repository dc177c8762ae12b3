package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/store/natstest"
)

// realMsgs publishes n messages of size bytes to a fresh stream of an
// embedded JetStream and returns them as a pull consumer delivers them.
func realMsgs(t *testing.T, n, size int) []jetstream.Msg {
	t.Helper()
	_, _, js := natstest.StartJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := js.Publish(ctx, "s.x", []byte(strings.Repeat("x", size))); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) != n {
		t.Fatalf("fetched %d messages, want %d", len(msgs), n)
	}
	return msgs
}

func TestInflightTakeAndGive(t *testing.T) {
	msgs := realMsgs(t, 3, 1000)
	one := msgSize(msgs[0])
	f := newInflight(2*one, time.Hour)
	ctx := context.Background()
	a, _ := f.take(ctx, msgs[0])
	b, _ := f.take(ctx, msgs[1])
	if got := f.held(); got != 2*one {
		t.Fatalf("held after two takes = %d, want %d", got, 2*one)
	}
	// The third waits until one of the first two is finished.
	taken := make(chan jetstream.Msg)
	go func() {
		m, _ := f.take(ctx, msgs[2])
		taken <- m
	}()
	select {
	case <-taken:
		t.Fatal("a third event was taken while the bound was full")
	case <-time.After(50 * time.Millisecond):
	}
	if err := a.Ack(); err != nil {
		t.Fatal(err)
	}
	c := <-taken
	a.Ack() // twice: gives nothing more back
	if got := f.held(); got != 2*one {
		t.Fatalf("held after an ack and the third take = %d, want %d", got, 2*one)
	}
	b.Nak()
	c.TermWithReason("test")
	if got := f.held(); got != 0 {
		t.Fatalf("held after every event finished = %d, want 0", got)
	}
	// An event larger than the bound takes all of it, alone.
	small := newInflight(one/2, time.Hour)
	m, _ := small.take(ctx, msgs[0])
	if got := small.held(); got != one/2 {
		t.Fatalf("held by an oversize event = %d, want the whole bound %d", got, one/2)
	}
	m.Ack()
	// A take gives up when its context ends.
	full := newInflight(one, time.Hour)
	full.take(ctx, msgs[0])
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok := full.take(cctx, msgs[1]); ok {
		t.Fatal("take on a full bound with a cancelled context succeeded")
	}
}

// An event that is never finished gives its bytes back once AckWait has
// passed without InProgress: the server redelivers it then anyway.
func TestInflightAckWaitReturnsBytes(t *testing.T) {
	msgs := realMsgs(t, 1, 100)
	f := newInflight(1<<20, 100*time.Millisecond)
	if _, ok := f.take(context.Background(), msgs[0]); !ok {
		t.Fatal("take failed")
	}
	natstest.Eventually(t, 10*time.Second, "bytes of an unfinished event back after AckWait", func() bool { return f.held() == 0 })
}
