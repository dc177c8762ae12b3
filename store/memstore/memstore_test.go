package memstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
)

func TestWatch(t *testing.T) {
	ps := memstore.NewPins[pin]()
	ctx, cancel := context.WithCancel(t.Context())
	w, err := ps.Watch(ctx)
	if err != nil {
		t.Fatalf("Watch() error = %v", err)
	}
	long := strings.Repeat("x", store.MaxReversibleID+1)
	r1, _ := ps.Create(t.Context(), newPin("a.b", 1))
	r2, _ := ps.Update(t.Context(), newPin("a.b", 2), r1)
	_ = ps.Delete(t.Context(), "a.b")
	r4, _ := ps.Create(t.Context(), newPin(long, 1))
	want := []store.Change{
		{Key: store.EncodeKey("a.b"), ID: "a.b", Rev: r1, Op: store.OpPut},
		{Key: store.EncodeKey("a.b"), ID: "a.b", Rev: r2, Op: store.OpPut},
		{Key: store.EncodeKey("a.b"), ID: "a.b", Rev: r2 + 1, Op: store.OpDelete},
		{Key: store.EncodeKey(long), ID: "", Rev: r4, Op: store.OpPut},
	}
	for i, wc := range want {
		got, err := w.Next(t.Context())
		if err != nil {
			t.Fatalf("Next() #%d error = %v", i+1, err)
		}
		if got != wc {
			t.Fatalf("Next() #%d = %+v, want %+v", i+1, got, wc)
		}
	}
	cancel() // ends the watch, as Stop does
	if _, err := w.Next(t.Context()); !errors.Is(err, store.ErrWatchClosed) {
		t.Fatalf("Next() after cancel error = %v, want %v", err, store.ErrWatchClosed)
	}
	if err := w.Stop(); err != nil {
		t.Fatalf("Stop() after cancel error = %v, want nil", err)
	}
	if err := w.Stop(); err != nil {
		t.Fatalf("Stop() twice error = %v, want nil", err)
	}
}

func TestMaxEntries(t *testing.T) {
	ls := memstore.NewLeases(memstore.WithMaxEntries(2))
	ctx := t.Context()
	urls := []string{"https://a.example/", "https://b.example/", "https://c.example/"}
	for _, u := range urls {
		if _, err := ls.Create(ctx, store.Lease{CardURL: u}); err != nil {
			t.Fatalf("Create(%s) error = %v", u, err)
		}
	}
	held := 0
	for _, u := range urls {
		if _, _, err := ls.Get(ctx, u); err == nil {
			held++
		} else if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get(%s) error = %v", u, err)
		}
	}
	if _, _, err := ls.Get(ctx, urls[2]); err != nil || held != 2 {
		t.Fatalf("after 3 creates into 2 entries: %d held, the last one: %v; want 2 held, the last among them", held, err)
	}
}

// pin is the record these tests store (the conformance suite, with its
// fixtures, runs on memstore from package store's tests).
type pin struct {
	TaskID string `json:"taskId"`
	N      int    `json:"n"`
}

func newPin(taskID string, n int) pin { return pin{TaskID: taskID, N: n} }
func (p pin) Key() string             { return p.TaskID }
func (p pin) Clone() pin              { return p }
