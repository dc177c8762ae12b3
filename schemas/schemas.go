package schemas

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/carddrift/carddrift/detector/jcs"
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
	ID      string // the $id, the dataschema attribute of its events
	Type    string
	Version int    // the N in v<N>
	File    string // the embedded file name

	raw  []byte
	root *node
}

// Source returns a copy of the schema file's bytes.
func (s *Schema) Source() []byte { return bytes.Clone(s.raw) }

// Validate validates data, one JSON value. Data that is not JSON is a
// *ValidationError for the root field.
func (s *Schema) Validate(data []byte) error {
	var sc jcs.Scanner
	var r Reader
	err := sc.Reset(data, jcs.Limits{})
	if err == nil {
		r.Reset(s, &sc, data, false)
		if r.Skip(); r.err == nil {
			r.err = sc.End()
		}
		err = r.Err()
	}
	var syntax *jcs.SyntaxError
	if errors.As(err, &syntax) {
		return &ValidationError{Type: s.Type, Reason: "not JSON: " + err.Error()}
	}
	return err
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

// All returns every embedded schema, sorted by type then version. It
// panics if the embedded schemas do not compile.
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
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("schemas: file %s: %w", name, err)
		}
		id := ID(typ, version)
		if doc["$id"] != id {
			return nil, fmt.Errorf("schemas: file %s: $id is not %s", name, id)
		}
		root, err := compileFile(name, doc)
		if err != nil {
			return nil, err
		}
		if d := root.depth(); d >= maxPath {
			return nil, fmt.Errorf("schemas: file %s: %d levels deep, more than %d", name, d, maxPath-1)
		}
		s := &Schema{ID: id, Type: typ, Version: version, File: name, raw: raw, root: root}
		r.byID[id] = s
		r.all = append(r.all, s)
		if cur, ok := r.byType[typ]; !ok || cur.Version < version {
			r.byType[typ] = s
		}
	}
	slices.SortFunc(r.all, func(a, b *Schema) int {
		return cmp.Or(strings.Compare(a.Type, b.Type), a.Version-b.Version)
	})
	return r, nil
}

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

func escapeToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
}
