package replay_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/events/inspect/replay"
)

// TestTimelineExtendedPin: a task's timeline says which card its pin is
// (card.pinned extended: the extended card, or unavailable: the public card).
func TestTimelineExtendedPin(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	pin := func(task, extended string) replay.Entry {
		return replay.Entry{Time: t0, Kind: replay.KindPin, Type: events.TypePinned, TaskID: task, AgentURL: "https://ledger.example",
			Data: events.Pinned{TaskID: task, AgentURL: "https://ledger.example", Source: events.PinFirstFetch, Extended: extended}}
	}
	tl := &replay.Timeline{Entries: []replay.Entry{pin("ext", events.ExtendedPinned), pin("pub", events.ExtendedUnavailable), pin("plain", "")}}
	var b bytes.Buffer
	if err := tl.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pinned (first-fetch, the extended card)", "pinned (first-fetch, extended card unavailable: the public card)", "pinned (first-fetch)\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("timeline lacks %q:\n%s", want, b.String())
		}
	}
}
