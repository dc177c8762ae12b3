package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// BaseURL prefixes every schema id: BaseURL + "<type>/v<N>.json".
const BaseURL = "https://carddrift.dev/schemas/"

//go:embed *.json
var files embed.FS

// FS returns the embedded schema files (<type>.v<N>.json), for serving or
// publishing them as they are.
func FS() fs.FS { return files }

// Schema is one compiled, embedded schema. Its methods are safe for
// concurrent use.
type Schema struct {
	// ID is the schema's $id, the value of the CloudEvents dataschema
	// attribute of events whose data it describes.
	ID string
	// Type is the CloudEvents type the schema describes.
	Type string
	// Version is the schema version (the N in v<N>).
	Version int
	// File is the embedded file name.
	File string

	raw      []byte
	compiled *jsonschema.Schema
	// fast is the schema compiled into Go checks (compiled.go), nil for
	// a schema without them.
	fast *node
}

// Source returns a copy of the schema file's bytes.
func (s *Schema) Source() []byte { return bytes.Clone(s.raw) }

// Validate parses data as JSON and validates it. Data that is not JSON is a
// *ValidationError for the root field.
func (s *Schema) Validate(data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &ValidationError{Type: s.Type, Reason: "not JSON: " + err.Error()}
	}
	return s.ValidateValue(v)
}

// ValidateValue validates an already-parsed JSON value: nil, bool, string,
// json.Number, float64 or an integer type, []any and map[string]any, as
// encoding/json produces with UseNumber. It returns a *ValidationError or nil.
//
// The schema's checks compiled into Go (see compiled.go) decide first;
// what they reject goes to the JSON Schema validator, whose decision and
// error are returned.
func (s *Schema) ValidateValue(v any) error {
	if s.fast != nil {
		if _, ok := checkCompiled(s.fast, v); ok {
			return nil
		}
	}
	return s.validateGeneral(v)
}

// validateGeneral validates v with the JSON Schema validator.
func (s *Schema) validateGeneral(v any) error {
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return &ValidationError{Type: s.Type, Reason: err.Error()}
	}
	return s.convert(verr)
}

// Validate validates data against the current schema of eventType. It returns
// ErrUnknownType (wrapped) for a type without a schema and a
// *ValidationError for data that does not conform.
func Validate(eventType string, data []byte) error {
	s, err := Lookup(eventType)
	if err != nil {
		return err
	}
	return s.Validate(data)
}

// Lookup returns the current (highest) version of the schema of eventType,
// or an error wrapping ErrUnknownType.
func Lookup(eventType string) (*Schema, error) {
	return find(func(r *registry) map[string]*Schema { return r.byType }, eventType, ErrUnknownType)
}

// ByID returns the schema with the given $id, or an error wrapping
// ErrUnknownSchema.
func ByID(id string) (*Schema, error) {
	return find(func(r *registry) map[string]*Schema { return r.byID }, id, ErrUnknownSchema)
}

// find returns the schema under key in the index of the registry, or an
// error wrapping unknown.
func find(index func(*registry) map[string]*Schema, key string, unknown error) (*Schema, error) {
	r, err := load()
	if err != nil {
		return nil, err
	}
	if s, ok := index(r)[key]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("%w: %q", unknown, key)
}

// All returns every embedded schema, every version, sorted by type then
// version. It panics if the embedded schemas do not compile (which the
// package tests rule out).
func All() []*Schema {
	r, err := load()
	if err != nil {
		panic(err)
	}
	return slices.Clone(r.all)
}

// ID returns the schema id BaseURL + "<eventType>/v<version>.json".
func ID(eventType string, version int) string {
	return BaseURL + eventType + "/v" + strconv.Itoa(version) + ".json"
}

type registry struct {
	byType map[string]*Schema // current version
	byID   map[string]*Schema
	all    []*Schema
}

var (
	loadOnce sync.Once
	loaded   *registry
	loadErr  error
)

func load() (*registry, error) {
	loadOnce.Do(func() { loaded, loadErr = compileAll() })
	return loaded, loadErr
}

func compileAll() (*registry, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	r := &registry{byType: map[string]*Schema{}, byID: map[string]*Schema{}}
	for _, e := range entries {
		name := e.Name()
		typ, version, ok := parseFileName(name)
		if !ok {
			return nil, fmt.Errorf("schemas: file %s: name is not <type>.v<N>.json", name)
		}
		raw, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("schemas: file %s: %w", name, err)
		}
		id := ID(typ, version)
		if m, _ := doc.(map[string]any); m == nil || m["$id"] != id {
			return nil, fmt.Errorf("schemas: file %s: $id is not %s", name, id)
		}
		if err := c.AddResource(id, inlineRefs(doc, doc)); err != nil {
			return nil, fmt.Errorf("schemas: file %s: %w", name, err)
		}
		s := &Schema{ID: id, Type: typ, Version: version, File: name, raw: raw, fast: compiled[id]}
		r.byID[id] = s
		r.all = append(r.all, s)
	}
	for _, s := range r.all {
		cs, err := c.Compile(s.ID)
		if err != nil {
			return nil, fmt.Errorf("schemas: file %s: %w", s.File, err)
		}
		s.compiled = cs
		if cur, ok := r.byType[s.Type]; !ok || cur.Version < s.Version {
			r.byType[s.Type] = s
		}
	}
	slices.SortFunc(r.all, func(a, b *Schema) int {
		if c := strings.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
	return r, nil
}

// parseFileName splits "a2a.task.submitted.v1.json" into
// ("a2a.task.submitted", 1).
func parseFileName(name string) (typ string, version int, ok bool) {
	base, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndex(base, ".v")
	if i <= 0 {
		return "", 0, false
	}
	v, err := strconv.Atoi(base[i+2:])
	if err != nil || v < 1 || strconv.Itoa(v) != base[i+2:] {
		return "", 0, false
	}
	return base[:i], v, true
}

// refuseLoader keeps the compiler from reading files or the network: every
// schema it needs is added as a resource, and the draft 2020-12 meta-schemas
// are built into the library.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schemas: refusing to load %s", url)
}

var printer = message.NewPrinter(language.English)

// convert turns the library's error tree into one ValidationError naming the
// first violating field by JSON pointer.
func (s *Schema) convert(verr *jsonschema.ValidationError) *ValidationError {
	type leaf struct{ field, reason string }
	var leaves []leaf
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := pointer(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				leaves = append(leaves, leaf{loc + "/" + escapeToken(m), "missing required property"})
			}
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				leaves = append(leaves, leaf{loc + "/" + escapeToken(p), "unknown property"})
			}
		case *kind.FalseSchema:
			leaves = append(leaves, leaf{loc, "property not allowed together with the properties present"})
		case *kind.Group, *kind.Schema:
			// Group nodes without causes carry no information.
		default:
			leaves = append(leaves, leaf{loc, e.ErrorKind.LocalizedString(printer)})
		}
	}
	walk(verr)
	if len(leaves) == 0 {
		return &ValidationError{Type: s.Type, Reason: verr.Error()}
	}
	slices.SortFunc(leaves, func(a, b leaf) int {
		if c := strings.Compare(a.field, b.field); c != 0 {
			return c
		}
		return strings.Compare(a.reason, b.reason)
	})
	leaves = slices.Compact(leaves)
	out := &ValidationError{Type: s.Type, Field: leaves[0].field, Reason: leaves[0].reason}
	if n := len(leaves) - 1; n > 0 {
		out.Reason += fmt.Sprintf(" (and %d more violation(s))", n)
	}
	return out
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

func escapeToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
}

// inlineRefs replaces local references ("$ref": "#/$defs/<name>") with the
// definition they point at, merged with the referencing object's other
// keywords, when those are annotations only (description, title, examples)
// or do not collide with the definition's. Validation means the same (our
// definitions are not recursive), but skips the validator's per-reference
// scope bookkeeping, which is about a fifth of the cost of validating an
// event. The embedded source keeps its $defs and $refs for readers.
func inlineRefs(v, root any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = inlineRefs(x, root)
		}
		ref, ok := out["$ref"].(string)
		if !ok {
			return out
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok || strings.ContainsAny(name, "/~") {
			return out
		}
		defs, _ := root.(map[string]any)["$defs"].(map[string]any)
		def, ok := defs[name].(map[string]any)
		if !ok {
			return out
		}
		merged := inlineRefs(def, root).(map[string]any)
		for k, x := range out {
			if k == "$ref" {
				continue
			}
			if _, clash := merged[k]; clash && k != "description" && k != "title" && k != "examples" {
				return out // keep the reference: both keywords must apply
			}
			merged[k] = x
		}
		return merged
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = inlineRefs(x, root)
		}
		return out
	}
	return v
}
