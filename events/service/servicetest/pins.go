package servicetest

import (
	"context"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/carddrift/carddrift/events/task"
	"github.com/carddrift/carddrift/store"
)

// SecondWriter is a pin store whose next Update, once armed, races another
// writer's on its own connection (a partition hand-over).
type SecondWriter struct {
	store.Pins[task.Pin]
	other  store.Pins[task.Pin]
	taskID string
	drift  string
	armed  atomic.Bool
	writes atomic.Int64
}

// SecondWriter wraps pins (nil: set later); the other writer records
// drift on taskID (any when empty).
func (r *Rig) SecondWriter(pins store.Pins[task.Pin], taskID, drift string) *SecondWriter {
	r.T.Helper()
	nc, err := nats.Connect(r.URL())
	if err != nil {
		r.T.Fatal(err)
	}
	r.T.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		r.T.Fatal(err)
	}
	other, err := store.Bind[task.Pin](context.Background(), js, r.Config)
	if err != nil {
		r.T.Fatal(err)
	}
	return &SecondWriter{Pins: pins, other: other.Pins, taskID: taskID, drift: drift}
}

// Arm makes the next Update of the task race with the other writer's.
func (p *SecondWriter) Arm() { p.armed.Store(true) }

// Writes is how many times the other writer has written.
func (p *SecondWriter) Writes() int64 { return p.writes.Load() }

// Update writes pin, after the other writer's update if armed.
func (p *SecondWriter) Update(ctx context.Context, pin task.Pin, rev uint64) (uint64, error) {
	if (p.taskID == "" || pin.TaskID == p.taskID) && p.armed.CompareAndSwap(true, false) {
		cur, crev, err := p.other.Get(ctx, pin.TaskID)
		if err != nil {
			return 0, err
		}
		cur.AddReported(p.drift)
		if _, err := p.other.Update(ctx, cur, crev); err != nil {
			return 0, err
		}
		p.writes.Add(1)
	}
	return p.Pins.Update(ctx, pin, rev)
}
