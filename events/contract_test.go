package events_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/signature"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/schemas"
	"github.com/carddrift/carddrift/store/fetcher"
)

// TestKnownNamesMatchDetector keeps the documented method and state names
// of the schemas and the detector's lifecycle classification in step.
func TestKnownNamesMatchDetector(t *testing.T) {
	for _, m := range enum(t, events.TypeRequest, "$defs/knownMethods/enum") {
		if detector.ClassifyMethod(m) == detector.MethodUnknown {
			t.Errorf("schema knownMethods has %q, which detector.ClassifyMethod does not know", m)
		}
	}
	for _, s := range enum(t, events.TypeStatus, "$defs/knownStates/enum") {
		if _, ok := detector.NormalizeState(s); !ok {
			t.Errorf("schema knownStates has %q, which detector.NormalizeState does not know", s)
		}
	}
}

// TestUnreachableReasons keeps every published copy of the one reason list
// of card.unreachable (fetcher.UnreachableReasons) equal to it, in order:
// the schema's knownReasons enum and the table of the public contract
// (schemas/README.md), descriptions included.
func TestUnreachableReasons(t *testing.T) {
	var want []string
	for _, r := range fetcher.UnreachableReasons() {
		want = append(want, string(r))
		if r.Description() == "" {
			t.Errorf("reason %q has no description", r)
		}
	}
	if slices.Contains(want, string(fetcher.ReasonCanceled)) {
		t.Errorf("UnreachableReasons() = %v: a canceled fetch is never published", want)
	}
	if got := enum(t, events.TypeUnreachable, "$defs/knownReasons/enum"); !slices.Equal(got, want) {
		t.Errorf("schema knownReasons = %v\nfetcher.UnreachableReasons() = %v", got, want)
	}

	doc, err := os.ReadFile(filepath.Join("..", "schemas", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "### `card.unreachable` reasons\n")
	if !ok {
		t.Fatal("schemas/README.md has no section \"### `card.unreachable` reasons\"")
	}
	var rows []string
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if strings.HasPrefix(line, "| `") {
			rows = append(rows, line)
		}
	}
	var wantRows []string
	for _, r := range fetcher.UnreachableReasons() {
		wantRows = append(wantRows, "| `"+string(r)+"` | "+r.Description()+" |")
	}
	if !slices.Equal(rows, wantRows) {
		t.Errorf("schemas/README.md reasons table:\n%s\nwant (from fetcher.UnreachableReasons):\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
}

// TestSignatureReasons keeps the signer outcomes the schemas document
// (knownSignatureReasons of card.drift and card.pinned) equal to
// signature.Reasons, the one list, in order.
func TestSignatureReasons(t *testing.T) {
	var want []string
	for _, r := range signature.Reasons() {
		want = append(want, string(r))
	}
	for _, typ := range []string{events.TypeDrift, events.TypePinned} {
		if got := enum(t, typ, "$defs/knownSignatureReasons/enum"); !slices.Equal(got, want) {
			t.Errorf("%s knownSignatureReasons = %v\nsignature.Reasons() = %v", typ, got, want)
		}
	}
	if detector.SignatureVerified != string(signature.ReasonVerified) || detector.SignatureInvalid != string(signature.ReasonInvalidSignature) {
		t.Errorf("detector's outcomes %q, %q differ from signature's %q, %q", detector.SignatureVerified, detector.SignatureInvalid,
			signature.ReasonVerified, signature.ReasonInvalidSignature)
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

// TestEnumsMatchCode keeps the code's constants for the contract's enums
// equal to the schemas' lists, in order.
func TestEnumsMatchCode(t *testing.T) {
	for _, c := range []struct {
		name       string
		code, want []string
	}{
		{"postures", []string{string(detector.FailClosed), string(detector.Degrade)},
			enum(t, events.TypeSubmitted, "properties/posture/enum")},
		{"actions", []string{string(detector.Abort), string(detector.Replan), string(detector.Continue)},
			enum(t, events.TypeDrift, "properties/verdict/properties/action/enum")},
		{"severities", []string{detector.Breaking.String(), detector.Warning.String(), detector.Info.String()},
			enum(t, events.TypeDrift, "$defs/finding/properties/severity/enum")},
		{"pin sources", []string{events.PinClientCard, events.PinClientDigest, events.PinFirstFetch},
			enum(t, events.TypePinned, "properties/source/enum")},
		{"extended", []string{events.ExtendedPinned, events.ExtendedUnavailable},
			enum(t, events.TypePinned, "properties/extended/enum")},
		{"signer sources", []string{detector.SourceTrusted, detector.SourceJKU},
			enum(t, events.TypeDrift, "$defs/signer/properties/source/enum")},
	} {
		if !slices.Equal(c.code, c.want) {
			t.Errorf("%s: code %v, schema %v", c.name, c.code, c.want)
		}
	}
}

// TestFieldsMatchTypes keeps the members of every event type's data as
// json.Marshal writes them (the Go type's json names) equal to the
// members its schema lists.
func TestFieldsMatchTypes(t *testing.T) {
	for _, d := range []events.Data{events.Submitted{}, events.Request{}, events.Status{}, events.Artifact{}, events.Error{},
		events.Drift{}, events.Pinned{}, events.Observed{}, events.Unreachable{}, events.Inconsistent{}} {
		var names []string
		rt := reflect.TypeOf(d)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name != "-" && name != "" {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		props, _ := schemaAt(t, d.EventType(), "properties").(map[string]any)
		if want := slices.Sorted(maps.Keys(props)); !slices.Equal(names, want) {
			t.Errorf("%s: Go type %T has members %v, the schema %v", d.EventType(), d, names, want)
		}
	}
}

// enum returns the list of strings at pointer (a JSON pointer without its
// leading "/") in the current schema of typ.
func enum(t *testing.T, typ, pointer string) []string {
	t.Helper()
	list, _ := schemaAt(t, typ, pointer).([]any)
	var out []string
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("%s#/%s holds %v, not a string", typ, pointer, v)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		t.Fatalf("%s#/%s is not a list of strings", typ, pointer)
	}
	return out
}

// schemaAt returns the value at pointer in the current schema of typ.
func schemaAt(t *testing.T, typ, pointer string) any {
	t.Helper()
	s, err := schemas.Lookup(typ)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(s.Source(), &v); err != nil {
		t.Fatal(err)
	}
	for _, tok := range strings.Split(pointer, "/") {
		m, _ := v.(map[string]any)
		if v = m[tok]; v == nil {
			t.Fatalf("%s has nothing at #/%s", typ, pointer)
		}
	}
	return v
}
