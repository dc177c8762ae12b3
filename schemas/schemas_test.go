package schemas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/schemas"
)

var wantTypes = []string{
	"a2a.task.artifact",
	"a2a.task.error",
	"a2a.task.request",
	"a2a.task.status",
	"a2a.task.submitted",
	"card.drift",
	"card.inconsistent",
	"card.observed",
	"card.pinned",
	"card.unreachable",
}

func TestAll(t *testing.T) {
	var got []string
	for _, s := range schemas.All() {
		got = append(got, s.Type)
		if want := schemas.BaseURL + s.Type + "/v1.json"; s.ID != want {
			t.Errorf("%s: ID = %s, want %s", s.File, s.ID, want)
		}
		if want := s.Type + ".v1.json"; s.File != want {
			t.Errorf("%s: File = %s, want %s", s.Type, s.File, want)
		}
		cur, err := schemas.Lookup(s.Type)
		if err != nil || cur != s {
			t.Errorf("Lookup(%s) = %v, %v; want %s", s.Type, cur, err, s.ID)
		}
		byID, err := schemas.ByID(s.ID)
		if err != nil || byID != s {
			t.Errorf("ByID(%s) = %v, %v", s.ID, byID, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(s.Source(), &doc); err != nil {
			t.Errorf("%s: Source is not JSON: %v", s.File, err)
		}
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema = %v, want draft 2020-12", s.File, doc["$schema"])
		}
	}
	if !reflect.DeepEqual(got, wantTypes) {
		t.Errorf("All() types = %v, want %v", got, wantTypes)
	}
}

func TestUnknown(t *testing.T) {
	if _, err := schemas.Lookup("a2a.task.teleported"); !errors.Is(err, schemas.ErrUnknownType) {
		t.Errorf("Lookup(unknown) = %v, want ErrUnknownType", err)
	}
	if err := schemas.Validate("nope", []byte(`{}`)); !errors.Is(err, schemas.ErrUnknownType) {
		t.Errorf("Validate(unknown) = %v, want ErrUnknownType", err)
	}
	if _, err := schemas.ByID(schemas.ID("card.drift", 2)); !errors.Is(err, schemas.ErrUnknownSchema) {
		t.Errorf("ByID(v2) = %v, want ErrUnknownSchema", err)
	}
}

func TestValidateRootErrors(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"not JSON", `{"taskId":`},
		{"trailing data", `{} {}`},
		{"array", `[]`},
		{"null", `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := schemas.Validate("a2a.task.request", []byte(tc.data))
			var verr *schemas.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate(%s) = %v, want *ValidationError", tc.data, err)
			}
			if verr.Field != "" || verr.Type != "a2a.task.request" {
				t.Errorf("Validate(%s) = %+v, want root field", tc.data, verr)
			}
		})
	}
}

// TestExamples checks every example under testdata/<type>/valid (data that
// must validate) and testdata/<type>/invalid (objects {"field", "data"}:
// data that must fail, naming field).
func TestExamples(t *testing.T) {
	for _, typ := range wantTypes {
		t.Run(typ, func(t *testing.T) {
			valid, _ := filepath.Glob(filepath.Join("testdata", typ, "valid", "*.json"))
			invalid, _ := filepath.Glob(filepath.Join("testdata", typ, "invalid", "*.json"))
			if len(valid) == 0 || len(invalid) == 0 {
				t.Fatalf("%s: %d valid and %d invalid examples, want at least one of each", typ, len(valid), len(invalid))
			}
			for _, f := range valid {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := schemas.Validate(typ, data); err != nil {
					t.Errorf("%s: Validate = %v, want nil", f, err)
				}
			}
			for _, f := range invalid {
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var ex struct {
					Field string          `json:"field"`
					Data  json.RawMessage `json:"data"`
				}
				if err := json.Unmarshal(raw, &ex); err != nil || ex.Data == nil {
					t.Fatalf("%s: not an invalid example: %v", f, err)
				}
				err = schemas.Validate(typ, ex.Data)
				var verr *schemas.ValidationError
				if !errors.As(err, &verr) {
					t.Errorf("%s: Validate = %v, want *ValidationError", f, err)
					continue
				}
				if verr.Field != ex.Field || verr.Type != typ || verr.Reason == "" {
					t.Errorf("%s: Validate = {Field:%q Reason:%q}, want field %q", f, verr.Field, verr.Reason, ex.Field)
				}
				if !strings.Contains(verr.Error(), verr.Field) {
					t.Errorf("%s: Error() = %q does not name the field", f, verr.Error())
				}
			}
		})
	}
}

// TestSharedDefs keeps definitions that several schemas repeat (each schema
// is self-contained) identical across files.
func TestSharedDefs(t *testing.T) {
	seen := map[string]any{}
	where := map[string]string{}
	for _, s := range schemas.All() {
		var doc struct {
			Defs map[string]any `json:"$defs"`
		}
		if err := json.Unmarshal(s.Source(), &doc); err != nil {
			t.Fatal(err)
		}
		for name, def := range doc.Defs {
			if prev, ok := seen[name]; ok && !reflect.DeepEqual(prev, def) {
				t.Errorf("$defs/%s differs between %s and %s", name, where[name], s.File)
				continue
			}
			seen[name], where[name] = def, s.File
		}
	}
}

func TestValidationErrorMultiple(t *testing.T) {
	err := schemas.Validate("a2a.task.request", []byte(`{"agentUrl":"https://a.example","attempt":0,"method":""}`))
	var verr *schemas.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("Validate = %v, want *ValidationError", err)
	}
	if verr.Field != "/attempt" || !strings.Contains(verr.Reason, "2 more") {
		t.Errorf("Validate = %+v, want /attempt and 2 more", verr)
	}
}

// TestPlainHTTPURL holds plainHTTPURL, the uri format's shortcut, to the
// format as url.Parse decides it: every URL it passes, the general check
// accepts; agent and card URLs pass it.
func TestPlainHTTPURL(t *testing.T) {
	for _, s := range []string{"https://a.example", "http://127.0.0.1:8080", "http://127.0.0.1:8080/a2a",
		"https://agent.example/.well-known/agent-card.json", "https://a.example:/x", "HTTP://A"} {
		want := s != "HTTP://A"
		if got := schemas.PlainHTTPURL(s); got != want {
			t.Errorf("plainHTTPURL(%q) = %v, want %v", s, got, want)
		}
	}
	alphabet := "aZ09.-_~!$&'()*+,;=:@/%?#[] \t\xff\\"
	rng := rand.New(rand.NewPCG(21, 1))
	passed := 0
	for i := range 50000 {
		b := make([]byte, rng.IntN(12))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		s := []string{"http://", "https://", "http:/", "ftp://", "https:"}[i%5] + string(b)
		if !schemas.PlainHTTPURL(s) {
			continue
		}
		passed++
		if !schemas.IsURIGeneral(s) {
			t.Errorf("plainHTTPURL(%q) = true, the uri format rejects it", s)
		}
	}
	if passed < 300 {
		t.Errorf("only %d random URLs passed plainHTTPURL", passed)
	}
}

// TestFastPatterns holds the loops that stand for the hot patterns to the
// regular expressions themselves, on random strings over the patterns'
// alphabets.
func TestFastPatterns(t *testing.T) {
	alphabet := "aAzZ09_-.:/?#~ \t\f\v\nsShHtTpP:é\xff" + "sha256:"
	rng := rand.New(rand.NewPCG(35, 1))
	for src, fast := range schemas.FastPatterns {
		re := regexp.MustCompile(src)
		seeds := []string{"", "https://a", "sha256:" + strings.Repeat("a", 64), "working", "skill-removed", strings.Repeat("a", 64)}
		for i := range 20000 {
			s := seeds[i%len(seeds)]
			b := []byte(s)
			for range rng.IntN(4) {
				switch j := rng.IntN(len(b) + 1); rng.IntN(3) {
				case 0:
					b = slices.Insert(b, j, alphabet[rng.IntN(len(alphabet))])
				case 1:
					if j < len(b) {
						b = slices.Delete(b, j, j+1)
					}
				default:
					if j < len(b) {
						b[j] = alphabet[rng.IntN(len(alphabet))]
					}
				}
			}
			if got, want := fast(string(b)), re.MatchString(string(b)); got != want {
				t.Errorf("pattern %s on %q: loop %v, regexp %v", src, b, got, want)
			}
		}
	}
}

// TestTame holds the exponent cap of number literals to big.Rat on the
// literal itself: the same integrality and the same order against the
// bounds and constants of the schemas.
func TestTame(t *testing.T) {
	bounds := []int64{0, 1, -1, 200, 304, 2147483647, -2147483648}
	for _, lit := range []string{"1e2000", "1.5e2000", "-1.5e2000", "1e-2000", "0e-2000", "0.0e2000", "-0.5e+2000",
		"123.456e-1999", "1E+1234", "-7e-1500", "1e999", "1.25e3", "10e-1"} {
		want, ok1 := new(big.Rat).SetString(lit)
		got, ok2 := new(big.Rat).SetString(schemas.Tame(lit))
		if !ok1 || !ok2 {
			t.Fatalf("%s: big.Rat reads the literal %v, tamed %q %v", lit, ok1, schemas.Tame(lit), ok2)
		}
		if want.IsInt() != got.IsInt() {
			t.Errorf("%s: integer %v, tamed %q %v", lit, want.IsInt(), schemas.Tame(lit), got.IsInt())
		}
		for _, b := range bounds {
			q := new(big.Rat).SetInt64(b)
			if want.Cmp(q) != got.Cmp(q) {
				t.Errorf("%s against %d: %d, tamed %q %d", lit, b, want.Cmp(q), schemas.Tame(lit), got.Cmp(q))
			}
		}
	}
	for _, lit := range []string{"1e99999999999999999999", "-1e-99999999999999999999", "1e1000000"} {
		if _, ok := new(big.Rat).SetString(schemas.Tame(lit)); !ok || len(schemas.Tame(lit)) > 20 {
			t.Errorf("%s tamed to %q", lit, schemas.Tame(lit))
		}
	}
}

// The JSON Schema files are the contract; schemas compiles them itself
// (compile.go) and checks data while reading it (read.go). The oracle
// here is github.com/santhosh-tekuri/jsonschema/v6, a test-only
// dependency: a full draft 2020-12 validator with format assertions, which
// decides what the contract accepts and which field it names first.

// oracles are the schema files compiled by the JSON Schema validator, by
// type.
var oracles = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	for _, s := range schemas.All() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Source()))
		if err != nil {
			return nil, err
		}
		if err := c.AddResource(s.ID, doc); err != nil {
			return nil, err
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, s := range schemas.All() {
		cs, err := c.Compile(s.ID)
		if err != nil {
			return nil, err
		}
		out[s.Type] = cs
	}
	return out, nil
})

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) { return nil, fmt.Errorf("refusing to load %s", url) }

// Oracle validates v (a value tree with json.Number numbers) against the
// contract of typ and returns whether it conforms and, when it does not,
// the first violating field by JSON pointer.
func Oracle(t testing.TB, typ string, v any) (field string, ok bool) {
	t.Helper()
	all, err := oracles()
	if err != nil {
		t.Fatal(err)
	}
	err = all[typ].Validate(v)
	if err == nil {
		return "", true
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("oracle: %v", err)
	}
	return firstField(verr), false
}

// firstField returns the smallest JSON pointer among the leaves of the
// validator's error tree (the property a required or additionalProperties
// error names, the instance location otherwise).
func firstField(verr *jsonschema.ValidationError) string {
	var fields []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		for _, c := range e.Causes {
			walk(c)
		}
		if len(e.Causes) > 0 {
			return
		}
		loc := pointer(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				fields = append(fields, loc+"/"+escape(m))
			}
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				fields = append(fields, loc+"/"+escape(p))
			}
		case *kind.Group, *kind.Schema:
		default:
			fields = append(fields, loc)
		}
	}
	walk(verr)
	if len(fields) == 0 {
		return ""
	}
	return slices.Min(fields)
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + escape(t))
	}
	return b.String()
}

func escape(t string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(t) }

// parse reads data as the validator's value tree (json.Number numbers).
func parse(t testing.TB, data []byte) (any, bool) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	return v, err == nil
}

// agree holds Validate to the oracle on v: the same decision, the same
// field named.
func agree(t *testing.T, typ string, v any, what string) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	agreeJSON(t, typ, v, data, what)
}

func agreeJSON(t *testing.T, typ string, v any, data []byte, what string) {
	t.Helper()
	field, ok := Oracle(t, typ, v)
	agreeDecode(t, typ, data, field, ok, what)
	got := schemas.Validate(typ, data)
	var verr *schemas.ValidationError
	switch {
	case ok && got != nil:
		t.Errorf("%s %s: Validate rejects (%v), JSON Schema accepts", typ, what, got)
	case !ok && got == nil:
		t.Errorf("%s %s: Validate accepts, JSON Schema rejects (field %q)", typ, what, field)
	case !ok && !errors.As(got, &verr):
		t.Errorf("%s %s: Validate error %T %v is not a *ValidationError", typ, what, got, got)
	case !ok && verr.Field != field:
		t.Errorf("%s %s: Validate names field %q (%s), JSON Schema %q", typ, what, verr.Field, verr.Reason, field)
	}
}

// agreeDecode holds events.Decode to the oracle's verdict on data, as the
// data of a binary-mode event of typ: it accepts exactly what the schema
// accepts, but for values its Go type cannot hold (an integer beyond the
// field's range, a leap second), and names the same field first.
func agreeDecode(t *testing.T, typ string, data []byte, field string, ok bool, what string) {
	t.Helper()
	m := &nats.Msg{Subject: "x", Data: data, Header: nats.Header{
		"ce-specversion": {"1.0"}, "ce-id": {"e1"}, "ce-source": {"urn:differential"}, "ce-type": {typ},
	}}
	ev, err := events.Decode(events.NATSMsg(m))
	var de *events.DecodeError
	switch {
	case ok && err != nil && errors.As(err, &de) && errors.Is(err, events.ErrSchemaViolation) &&
		(strings.HasPrefix(de.Reason, "integer out of range") || strings.HasPrefix(de.Reason, "unsupported date-time")):
	case ok && err != nil:
		t.Errorf("%s %s: Decode rejects (%v), JSON Schema accepts", typ, what, err)
	case !ok && err == nil:
		t.Errorf("%s %s: Decode accepts (%+v), JSON Schema rejects (field %q)", typ, what, ev.Data, field)
	case !ok && (!errors.As(err, &de) || !errors.Is(err, events.ErrSchemaViolation)):
		t.Errorf("%s %s: Decode = %v, want a schema violation", typ, what, err)
	case !ok && de.Field != field:
		t.Errorf("%s %s: Decode names field %q (%s), JSON Schema %q", typ, what, de.Field, de.Reason, field)
	}
}

// examples returns the data of every example of typ, valid and invalid.
func examples(t testing.TB, typ string) map[string][]byte {
	out := map[string][]byte{}
	valid, _ := filepath.Glob(filepath.Join("testdata", typ, "valid", "*.json"))
	invalid, _ := filepath.Glob(filepath.Join("testdata", typ, "invalid", "*.json"))
	for _, f := range valid {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = data
	}
	for _, f := range invalid {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ex struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(raw, &ex); err != nil {
			t.Fatal(err)
		}
		out[f] = ex.Data
	}
	if len(valid) == 0 || len(invalid) == 0 {
		t.Fatalf("%s: %d valid, %d invalid examples", typ, len(valid), len(invalid))
	}
	return out
}

// replacements are the values every member of an example is set to in
// turn: each JSON type, boundary lengths, near misses of the patterns and
// the uri format.
var replacements = func() []any {
	r := []any{
		nil, true, false, json.Number("0"), json.Number("1"), json.Number("-1"), json.Number("1.0"),
		json.Number("1.5"), json.Number("1e3"), json.Number("1e99"), json.Number("2147483647"),
		json.Number("2147483648"), json.Number("-2147483648"), json.Number("-2147483649"),
		json.Number("9223372036854775808"), json.Number("-0"), json.Number("0.5e1"),
		"", "x", "é", strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a", 128),
		strings.Repeat("a", 129), strings.Repeat("é", 256), strings.Repeat("é", 257), strings.Repeat("a", 257),
		strings.Repeat("é", 512), strings.Repeat("é", 513), strings.Repeat("a", 2048), strings.Repeat("a", 2049),
		strings.Repeat("a", 4096), strings.Repeat("é", 4097),
		"https://a.example", "HTTPS://A.example/x", "http://a", "https://", "https:///x", "https://?q",
		"https://#f", "https:// a", "https://\ta", "https://\fa", "https://\va", "ftp://a.example", "https:/a.example", "//a.example",
		"https://[::1]/", "https://[fe80::1%25en0]/", "https://::1/", "https://a.example:80/", "https://a.example:x/",
		"https://a b.example/", "https://a.example/%zz", "https://\u00e9.example/", "hTtPs://a",
		"https://" + strings.Repeat("a", 2040),
		"sha256:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("A", 64), "sha256:" + strings.Repeat("a", 63),
		"sha256:" + strings.Repeat("a", 65), "sha256:" + strings.Repeat("g", 64),
		"working", "input-required", "TASK_STATE_WORKING", "9lives", "a" + strings.Repeat("b", 63),
		"a" + strings.Repeat("b", 64), "a b", "a\n", "é",
		"fail-closed", "degrade", "Degrade",
		"2026-05-01T10:00:00Z", "2026-05-01t10:00:00.123+02:00", "2026-05-01T23:59:60Z", "2026-05-01T10:00:60Z",
		"2026-02-30T10:00:00Z", "2026-05-01T10:00:00", "2026-05-01T10:00:00.Z", "2026-05-01T24:00:00Z",
		"2026-05-01T10:00:00+24:00", "2026-05-01T00:59:60+01:00", "2026-05-01T23:59:60-00:00", "2026-05-01 10:00:00Z",
		"2026-05-01T10:00:00z", "2026-05-01T10:00:00+0200", "2026-05-01T1a:00:00Z", "2026-05-01T10:00:00.5é",
		"2m0s", "1.5h", "5µs", "1h2m3s", "1.s", "3ns4us", "10", "m",
		json.Number("200"), json.Number("304"), json.Number("200.0"), json.Number("2e2"), json.Number("3.04e2"),
		json.Number("200.5"), json.Number("99999999999999999999999"), "200",
		"/a/b", "/a~2", "a", "/~1x~0", "/", "//",
		strings.Repeat("A", 43), strings.Repeat("_", 42) + "-", strings.Repeat("a", 44), strings.Repeat("a", 42) + "=",
		"skill-removed", "Skill-removed", "skill--removed", "skill-", "a1-b2", strings.Repeat("a", 65),
		"trusted", "jku", "abort", "replan", "continue", "breaking", "info", "client-card", "client-digest", "first-fetch",
		map[string]any{"eventId": "e", "type": "t"}, map[string]any{"eventId": "", "type": "t"},
		map[string]any{"kid": "k", "alg": "ES256", "verified": true, "reason": "verified"},
		map[string]any{"digest": "sha256:" + strings.Repeat("a", 64)},
		[]any{}, []any{"x"}, []any{""}, []any{json.Number("1")}, []any{"a", "b"},
		[]any{strings.Repeat("a", 257)}, make([]any, 65),
		map[string]any{}, map[string]any{"x": "y"}, map[string]any{"oauth": []any{"read"}},
		map[string]any{"oauth": []any{""}}, map[string]any{"oauth": "read"}, map[string]any{"a/b~c": []any{1}},
		map[string]any{"streaming": true}, map[string]any{"streaming": "yes"},
	}
	var many []any
	for i := range 65 {
		many = append(many, "m"+strconv.Itoa(i))
	}
	r = append(r, many)
	big := map[string]any{}
	for i := range 65 {
		big["s"+strconv.Itoa(i)] = []any{}
	}
	return append(r, big)
}()

// mutations returns v (an object tree) with every member, at every depth,
// removed, and set to every replacement (below four levels, to the first
// nestedReplacements of them: one of each JSON type), plus an unknown
// member added at every object; of an array, the first and the last item.
func mutations(v any) []any { return mutate(v, 0) }

// fullDifferential (CARDDRIFT_FULL_DIFFERENTIAL=1) mutates the invalid
// examples too and tries every replacement down to four levels (about a
// million values, minutes); by default the valid examples are mutated,
// with every replacement at the top two levels, one of each JSON type at
// the next two.
var fullDifferential = os.Getenv("CARDDRIFT_FULL_DIFFERENTIAL") == "1"

// nestedReplacements is how many of replacements are tried below four
// levels of an example.
const nestedReplacements = 24

func mutate(v any, depth int) []any {
	if !fullDifferential && depth > 3 {
		return nil
	}
	repl := replacements
	if depth >= 4 || !fullDifferential && depth >= 2 {
		repl = replacements[:nestedReplacements]
	}
	var out []any
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		with := func(k string, x any, del bool) map[string]any {
			m := make(map[string]any, len(v)+1)
			for kk, xx := range v {
				m[kk] = xx
			}
			if del {
				delete(m, k)
			} else {
				m[k] = x
			}
			return m
		}
		out = append(out, with("zz~unknown/x", "u", false), with("", "u", false))
		for _, k := range keys {
			out = append(out, with(k, nil, true))
			for _, r := range repl {
				out = append(out, with(k, r, false))
			}
			for _, sub := range mutate(v[k], depth+1) {
				out = append(out, with(k, sub, false))
			}
		}
		if !fullDifferential && depth >= 2 {
			break // the optional members below two levels are covered by the full run
		}
		added := repl
		if !fullDifferential && depth >= 1 {
			added = replacements[:nestedReplacements]
		}
		for _, k := range []string{"card", "cardDigest", "skillId", "requires", "posture", "idempotent", "cardUrl", "scopes", "security",
			"fingerprint", "etag", "signer", "trigger", "detail", "taskId", "attemptedAt", "source", "thumbprint", "jku",
			"skill", "touches", "before", "fetchedAt"} {
			if _, ok := v[k]; !ok {
				for _, r := range added {
					out = append(out, with(k, r, false))
				}
			}
		}
	case []any:
		for i := range v {
			if i > 0 && i < len(v)-1 {
				continue // the items are alike: the first and the last stand for them
			}
			for _, r := range repl {
				a := slices.Clone(v)
				a[i] = r
				out = append(out, a)
			}
			for _, sub := range mutate(v[i], depth+1) {
				a := slices.Clone(v)
				a[i] = sub
				out = append(out, a)
			}
		}
	}
	return out
}

// TestDifferential holds Validate, the Reader every decoder reads with,
// and events.Decode, which reads every event type's data into its Go type
// with it, to the JSON Schema validator (the oracle) on every example under testdata/<type>/{valid,
// invalid} and on every single-member mutation of each example: removed,
// set to each of the replacements (every JSON type, boundary lengths and
// values, near misses of the patterns and of the uri format), an unknown
// member added. Same decision, same field.
//
// The comparison is one goroutine's, in which the race detector finds
// nothing and which it makes ten times slower (15 minutes under load 20,
// past go test's 10-minute package timeout). Under -race the test runs
// the same comparison, every value, in a child `go test` built without it
// (the subtests in parallel), and checks under the race detector what it
// can see: the compiled schemas and the validator used by several
// goroutines at once (differentialConcurrent).
func TestDifferential(t *testing.T) {
	if raceEnabled && os.Getenv(differentialChild) == "" {
		differentialConcurrent(t)
		differentialWithoutRace(t)
		return
	}
	for _, typ := range wantTypes {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			differential(t, typ)
		})
	}
}

// differentialChild is set in the environment of the child go test that
// runs TestDifferential without the race detector.
const differentialChild = "CARDDRIFT_DIFFERENTIAL_CHILD"

// differentialWithoutRace runs TestDifferential in a child go test
// of this package built without the race detector, and fails with its
// output when it fails.
func differentialWithoutRace(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goBin, "test", "-count=1", "-timeout=30m", "-run=^TestDifferential$", "-v", ".")
	cmd.Env = append(os.Environ(), differentialChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("TestDifferential without the race detector: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "--- PASS: TestDifferential/") {
			t.Log(strings.TrimPrefix(line, "--- PASS: TestDifferential/"))
		}
	}
}

// differentialConcurrent holds Validate to the oracle on
// every example of every type, the types in parallel goroutines and each
// example twice at once: what the race detector can check of schemas'
// shared state.
func differentialConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for _, typ := range wantTypes {
		for f, data := range examples(t, typ) {
			v, ok := parse(t, data)
			if !ok {
				t.Fatalf("%s: not JSON", f)
			}
			for range 2 {
				wg.Go(func() { agree(t, typ, v, filepath.Base(f)+" (concurrent)") })
			}
		}
	}
	wg.Wait()
}

func differential(t *testing.T, typ string) {
	n := 0
	{
		for f, data := range examples(t, typ) {
			v, ok := parse(t, data)
			if !ok {
				t.Fatalf("%s: not JSON", f)
			}
			agree(t, typ, v, filepath.Base(f))
			n++
			if !fullDifferential && strings.Contains(f, string(filepath.Separator)+"invalid"+string(filepath.Separator)) {
				continue
			}
			for i, m := range mutations(v) {
				agree(t, typ, m, fmt.Sprintf("%s mutation %d", filepath.Base(f), i))
				n++
			}
		}
		for _, root := range []any{nil, true, json.Number("1"), "x", []any{}} {
			agree(t, typ, root, fmt.Sprintf("root %v", root))
		}
	}
	t.Logf("%d values compared", n)
}

// FuzzValidate holds Validate and events.Decode to the oracle on any data (seeded with
// every example; committed corpus in testdata/fuzz/FuzzValidate) that both
// read as JSON: decision and field.
func FuzzValidate(f *testing.F) {
	for i, typ := range wantTypes {
		for _, data := range examples(f, typ) {
			f.Add(uint8(i), data)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		typ := wantTypes[int(which)%len(wantTypes)]
		v, ok := parse(t, data)
		if !ok {
			return
		}
		if err := schemas.Validate(typ, data); err != nil && strings.Contains(err.Error(), "not JSON") {
			return // duplicate keys, invalid UTF-8, too deep: not JSON to carddrift
		}
		agreeJSON(t, typ, v, data, string(data))
	})
}
