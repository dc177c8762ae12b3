package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/carddrift/carddrift/events/task"
)

// errNoSpace is a write still refused for lack of space when the handling
// ended (noSpace's error).
var errNoSpace = noSpaceError{reason: "server storage full", err: errFull}

// TestPoison: a permanent failure is dead-lettered with its reason on any
// delivery, any other failure with max-deliver on the MaxDeliver-th
// delivery or a later one; the event is terminated after its copy is
// stored (read back here), and counted dead-letter. Other failures pass on
// to redeliver, settled events through.
func TestPoison(t *testing.T) {
	_, js, cfg, dlq := startDLQ(t)
	cases := []struct {
		name       string
		maxDeliver int
		delivered  uint64
		h          *results
		want       []string
		outcome    string
		err        error
		reason     DeadLetterReason
		cause      error
	}{
		{"permanent, first delivery", 10, 1, handled("", errCorrupt), []string{"term corrupt-card"}, outcomeDeadLetter, nil, ReasonCorruptCard, errCorrupt},
		{"permanent, MaxDeliver unlimited", -1, 1, handled("", permanentError{reason: ReasonInvalidCard, err: errOther}), []string{"term invalid-card"}, outcomeDeadLetter, nil, ReasonInvalidCard, permanentError{reason: ReasonInvalidCard, err: errOther}},
		{"transient, the MaxDeliver-th delivery", 10, 10, handled("", errStore), []string{"term max-deliver"}, outcomeDeadLetter, nil, ReasonMaxDeliver, errStore},
		{"unclassified, past MaxDeliver", 10, 12, handled("", errOther), []string{"term max-deliver"}, outcomeDeadLetter, nil, ReasonMaxDeliver, errOther},
		{"no space, the MaxDeliver-th delivery: not a dead letter", 10, 10, handled("", errNoSpace), nil, "", errNoSpace, "", nil},
		{"no space, past MaxDeliver: not a dead letter", 10, 12, handled("", errNoSpace), nil, "", errNoSpace, "", nil},
		{"transient, the delivery before", 10, 9, handled("", errStore), nil, "", errStore, "", nil},
		{"transient, MaxDeliver unlimited", -1, 1000, handled("", errStore), nil, "", errStore, "", nil},
		{"handled", 10, 10, handled(task.OutcomeDrift, nil), nil, task.OutcomeDrift, nil, "", nil},
	}
	msgs := lifecycleMsgs(t, js, cfg, len(cases))
	w := &Worker{js: js, cfg: cfg, log: zerolog.Nop()}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			outcome, err := poison(c.maxDeliver, w.deadLetterOutcome)(c.h.handle)(context.Background(), deliveryOf(msgs[i], c.delivered))
			if outcome != c.outcome || !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
				t.Errorf("poison = %q, %v; want %q, %v", outcome, err, c.outcome, c.err)
			}
			if got := msgs[i].log(); !slices.Equal(got, c.want) {
				t.Errorf("message calls = %q, want %q", got, c.want)
			}
			if c.reason == "" {
				return
			}
			dl, err := dlq.GetLastMsgForSubject(context.Background(), "carddrift.dlq."+string(c.reason))
			if err != nil {
				t.Fatalf("the dead letter: %v", err)
			}
			if got, want := dl.Header.Get(HeaderStreamSequence), fmt.Sprint(mustMeta(t, msgs[i]).Sequence.Stream); got != want {
				t.Errorf("dead letter of stream sequence %s, want %s", got, want)
			}
			if got := dl.Header.Get(HeaderError); got != c.cause.Error() {
				t.Errorf("dead letter's %s = %q, want %q", HeaderError, got, c.cause.Error())
			}
		})
	}
}

// TestPoisonWithoutDeadLetterStream: when the copy cannot be stored the
// event is not terminated but NAKed with the growing delay, and counted
// retry: no dead-letter outage loses it.
func TestPoisonWithoutDeadLetterStream(t *testing.T) {
	_, js, cfg, _ := startDLQ(t)
	msg := lifecycleMsgs(t, js, cfg, 1)[0]
	if err := js.DeleteStream(context.Background(), cfg.DLQStream); err != nil {
		t.Fatal(err)
	}
	w := &Worker{js: js, cfg: cfg, log: zerolog.Nop()}
	outcome, err := poison(10, w.deadLetterOutcome)(handled("", errCorrupt).handle)(context.Background(), deliveryOf(msg, 1))
	if outcome != outcomeRetry || err != nil {
		t.Errorf("poison = %q, %v; want %q, nil", outcome, err, outcomeRetry)
	}
	if got, want := msg.log(), []string{"nak 2s"}; !slices.Equal(got, want) {
		t.Errorf("message calls = %q, want %q", got, want)
	}
}

// TestPastMaxDeliver: a delivery past MaxDeliver is not handled; it fails
// with errPastMaxDeliver and how often it was delivered. The MaxDeliver-th
// is handled, and so is every delivery without a limit or a count.
func TestPastMaxDeliver(t *testing.T) {
	cases := []struct {
		name       string
		maxDeliver int
		delivered  uint64
		handled    bool
	}{
		{"first delivery", 3, 1, true},
		{"the MaxDeliver-th", 3, 3, true},
		{"one past", 3, 4, false},
		{"far past", 3, 40, false},
		{"MaxDeliver unlimited", -1, 40, true},
		{"count unknown", 3, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := handled(task.OutcomeDrift, nil)
			outcome, err := pastMaxDeliver(c.maxDeliver)(h.handle)(context.Background(), &delivered{at: delivery{delivered: c.delivered}})
			if got := h.calls == 1; got != c.handled {
				t.Fatalf("handled: %v, want %v", got, c.handled)
			}
			if c.handled {
				if outcome != task.OutcomeDrift || err != nil {
					t.Errorf("pastMaxDeliver = %q, %v; want the handler's drift", outcome, err)
				}
				return
			}
			if want := fmt.Sprintf("delivered %d times", c.delivered); !errors.Is(err, errPastMaxDeliver) || !strings.Contains(err.Error(), want) {
				t.Errorf("pastMaxDeliver = %v, want errPastMaxDeliver, %s", err, want)
			}
		})
	}
}
