package memstore_test

import (
	"errors"
	"testing"

	"github.com/carddrift/carddrift/store"
	"github.com/carddrift/carddrift/store/memstore"
)

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
