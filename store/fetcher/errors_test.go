package fetcher

import (
	"errors"
	"slices"
	"testing"
)

// TestUnreachableReasons: the reasons a card.unreachable may carry are every
// Reason but ReasonCanceled, in the same order, each with a description.
// (events' contract test compares the schema and schemas/README.md with this
// list.)
func TestUnreachableReasons(t *testing.T) {
	var want []Reason
	for _, r := range Reasons() {
		if r != ReasonCanceled {
			want = append(want, r)
		}
	}
	got := UnreachableReasons()
	if !slices.Equal(got, want) {
		t.Errorf("UnreachableReasons() = %v, want %v", got, want)
	}
	for _, r := range got {
		if r.Description() == "" || !errors.Is(&FetchError{Reason: r}, r) {
			t.Errorf("reason %q: description %q, matched by its errors: %v; want both", r, r.Description(), errors.Is(&FetchError{Reason: r}, r))
		}
	}
	if d := ReasonCanceled.Description(); d != "" {
		t.Errorf("ReasonCanceled.Description() = %q, want none (never published)", d)
	}
	if d := Reason("no-such-reason").Description(); d != "" {
		t.Errorf("unknown reason's Description() = %q, want none", d)
	}
}
