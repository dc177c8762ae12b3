package events_test

import (
	"fmt"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
)

// Decode reads either content mode and returns typed data.
func ExampleDecode() {
	msg, _ := events.Encode(events.Event{
		ID: "evt-1", Source: "urn:client:planner-7",
		Data: events.Status{TaskID: "task-42", AgentURL: "https://travel.example", State: "TASK_STATE_AUTH_REQUIRED"},
	}, events.Structured)

	ev, err := events.Decode(events.NATSMsg(msg))
	if err != nil {
		panic(err)
	}
	switch d := ev.Data.(type) {
	case events.Status:
		st, _ := detector.NormalizeState(d.State)
		fmt.Println(ev.Type, ev.Subject, st)
	}
	fmt.Println(ev.DataSchema)
	// Output:
	// a2a.task.status task-42 auth-required
	// https://carddrift.dev/schemas/a2a.task.status/v1.json
}

// Ids of any shape become single, wildcard-free subject tokens.
func ExampleToken() {
	for _, id := range []string{"task-42", "orders.eu.7", "a b*>", "", "ü"} {
		tok := events.Token(id)
		back, _ := events.ParseToken(tok)
		fmt.Printf("%q -> %s -> %q\n", id, tok, back)
	}
	// Output:
	// "task-42" -> task-42 -> "task-42"
	// "orders.eu.7" -> orders=2Eeu=2E7 -> "orders.eu.7"
	// "a b*>" -> a=20b=2A=3E -> "a b*>"
	// "" -> = -> ""
	// "ü" -> =C3=BC -> "ü"
}
