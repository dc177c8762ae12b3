package events_test

import (
	"encoding/json"
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
	if got := schemaEnum(t, events.TypeUnreachable, "knownReasons"); !slices.Equal(got, want) {
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
		if got := schemaEnum(t, typ, "knownSignatureReasons"); !slices.Equal(got, want) {
			t.Errorf("%s schema knownSignatureReasons = %v\nsignature.Reasons() = %v", typ, got, want)
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
