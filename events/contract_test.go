package events_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/schemas"
)

// schemaEnum returns the enum of $defs/<def> in the schema of typ.
func schemaEnum(t *testing.T, typ, def string) []string {
	t.Helper()
	s, err := schemas.Lookup(typ)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]struct {
			Enum []string `json:"enum"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(s.Source(), &doc); err != nil {
		t.Fatal(err)
	}
	enum := doc.Defs[def].Enum
	if len(enum) == 0 {
		t.Fatalf("%s: $defs/%s has no enum", typ, def)
	}
	return enum
}

// TestKnownNamesMatchDetector keeps the documented method and state names
// of the schemas and the detector's lifecycle classification in step.
func TestKnownNamesMatchDetector(t *testing.T) {
	for _, m := range schemaEnum(t, events.TypeRequest, "knownMethods") {
		if detector.ClassifyMethod(m) == detector.MethodUnknown {
			t.Errorf("schema knownMethods has %q, which detector.ClassifyMethod does not know", m)
		}
	}
	for _, s := range schemaEnum(t, events.TypeStatus, "knownStates") {
		if _, ok := detector.NormalizeState(s); !ok {
			t.Errorf("schema knownStates has %q, which detector.NormalizeState does not know", s)
		}
	}
}

func TestKnownReasons(t *testing.T) {
	want := []string{
		events.ReasonTransport, events.ReasonTimeout, events.ReasonStatus, events.ReasonRefusedAddress,
		events.ReasonRedirect, events.ReasonTooLarge, events.ReasonInvalidJSON, events.ReasonInvalidUTF8,
		events.ReasonDuplicateKey, events.ReasonTooDeep, events.ReasonNotACard, events.ReasonUnsupportedVersion,
	}
	got := schemaEnum(t, events.TypeUnreachable, "knownReasons")
	slices.Sort(got)
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schema knownReasons = %v, Go constants = %v", got, want)
	}
}

// TestTypesHaveSchemas checks that every event type has a schema and every
// schema an event type.
func TestTypesHaveSchemas(t *testing.T) {
	var got []string
	for _, s := range schemas.All() {
		got = append(got, s.Type)
	}
	want := slices.Clone(events.Types)
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schema types = %v, event types = %v", got, want)
	}
}
