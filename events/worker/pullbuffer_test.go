package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/worker"
)

func TestPartitionBuffer(t *testing.T) {
	const payload = 1 << 20
	for _, tc := range []struct {
		name  string
		total int64
		n     int
		want  int
	}{
		{"equal parts", 64 << 20, 8, 8 << 20},
		{"at least one message", 4 << 20, 8, payload + worker.PullSlack},
		{"no partitions counts as one", 16 << 20, 0, 16 << 20},
		{"capped to an int32", 1 << 40, 1, 1<<31 - 1},
	} {
		if got := worker.PartitionBuffer(tc.total, tc.n, payload); got != tc.want {
			t.Errorf("%s: PartitionBuffer(%d, %d, %d) = %d, want %d", tc.name, tc.total, tc.n, payload, got, tc.want)
		}
	}
}

// Pull buffers bounded in bytes, as small as they may be: every message the
// stream accepts, up to the server's maximum payload, is still delivered
// and handled, the large ones and the small ones after them.
func TestPullBufferDeliversLargeMessages(t *testing.T) {
	r := newRig(t, func(o *worker.Options) { o.PullBufferBytes = 1 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	maxPayload := int(r.Conn.MaxPayload())
	const agent = "http://127.0.0.1:9"
	for i := range 6 {
		head := fmt.Sprintf(`{"name":"big %d","url":%q,"skills":[{"id":"s","name":"s","tags":["t"]}],"description":"`, i, agent)
		card := head + strings.Repeat("x", maxPayload-len(head)-16<<10) + `"}`
		if err := r.Emit.Submitted(ctx, events.Submitted{TaskID: fmt.Sprint("big-", i), AgentURL: agent, SkillID: "s", Card: []byte(card)}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if err := r.Emit.Request(ctx, events.Request{TaskID: fmt.Sprint("small-", i), AgentURL: agent, Method: "tasks/get", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	r.Drained(t, 30*time.Second)
	for i := range 6 {
		if _, _, err := r.Stores.Pins.Get(ctx, fmt.Sprint("big-", i)); err != nil {
			t.Errorf("task big-%d not pinned: %v", i, err)
		}
	}
}
