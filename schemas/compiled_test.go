package schemas_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/carddrift/carddrift/schemas"
)

// compiledTypes are the types whose schemas have compiled checks (all), with the SHA-256 of the schema file the checks were
// derived from.
var compiledTypes = map[string]string{
	"a2a.task.artifact":  "4efa0546ea4d11b09852023d51e9cddc13787a147893849cc99337edcb72808d",
	"a2a.task.error":     "fd773675210c631f00e74cee51032fde8009ead3bb48bc05d5df2a2e229e762f",
	"a2a.task.request":   "d8d0a83f2615a5b83898f8ce801b084e904c9dde82a40525b5c53b889d5ed164",
	"a2a.task.status":    "5f21b8ed4570c1660758fa1423ac67ef6e008e7842d5fa264e51c2c58961ae4e",
	"a2a.task.submitted": "e265d4479f854e06e862538e3d8adebd6d3542dd416259ebe109159b4d2a4dca",
	"card.drift":         "10a8112c964a9c958e2c7397431f9fc0299f331f963b989e778f4976dc2d5522",
	"card.inconsistent":  "9f768f7377c6d0bfb104cb3a18b379ec34ca88f491a6357d95d46b1e7cfe36c5",
	"card.observed":      "ea63c4d6cfdcc5dac463bd47e609cc532482f2fa4d1bdb2c48696c4bfeb4cf89",
	"card.pinned":        "68c854a105e8f8caa5b7db9a07609dfbb1e3a13d82ac0385acfe496b1b829653",
	"card.unreachable":   "a14c92163f3d0dc11ff56de01ed78dab82fb5a7a3fcb6018f12530c6b8e362ee",
}

// TestCompiledSchemasPinned fails when a schema with compiled checks
// changes: the checks in compiled.go are derived from the file by hand, so
// a change to the file must be carried into them (and the hash here
// updated) in the same commit. It also fails for a schema without checks
// and when the set of schemas with checks is not compiledTypes.
func TestCompiledSchemasPinned(t *testing.T) {
	for _, s := range schemas.All() {
		_, _, has := s.CheckCompiled(map[string]any{})
		want, listed := compiledTypes[s.Type]
		if has != listed {
			t.Errorf("%s: compiled checks %v, listed in compiledTypes %v", s.File, has, listed)
			continue
		}
		if !has {
			t.Errorf("%s has no compiled checks: derive them in compiled.go and list the type in compiledTypes (every schema has them)", s.File)
			continue
		}
		sum := sha256.Sum256(s.Source())
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s changed (sha256 %s, compiled.go was derived from %s): update its checks in compiled.go, then the hash in compiledTypes", s.File, got, want)
		}
	}
}

// parse reads data as the validator's value tree (json.Number numbers).
func parse(t testing.TB, data []byte) (any, bool) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	return v, err == nil
}

// agree holds the compiled checks of typ to the JSON Schema validator on
// v: the same decision, the same field named, and ValidateValue giving
// the validator's error (or nil) exactly.
func agree(t *testing.T, typ string, v any, what string) {
	t.Helper()
	s, err := schemas.Lookup(typ)
	if err != nil {
		t.Fatal(err)
	}
	field, ok, has := s.CheckCompiled(v)
	if !has {
		t.Fatalf("%s has no compiled checks", typ)
	}
	oracle := s.ValidateGeneral(v)
	var verr *schemas.ValidationError
	switch {
	case ok && oracle != nil:
		t.Errorf("%s %s: compiled accepts, JSON Schema rejects: %v", typ, what, oracle)
		return
	case !ok && oracle == nil:
		t.Errorf("%s %s: compiled rejects (field %q), JSON Schema accepts", typ, what, field)
		return
	case !ok && !errors.As(oracle, &verr):
		t.Errorf("%s %s: JSON Schema error %T %v is not a *ValidationError", typ, what, oracle, oracle)
		return
	case !ok && verr.Field != field:
		t.Errorf("%s %s: compiled names field %q, JSON Schema %q (%s)", typ, what, field, verr.Field, verr.Reason)
	}
	if got := s.ValidateValue(v); fmt.Sprint(got) != fmt.Sprint(oracle) {
		t.Errorf("%s %s: ValidateValue = %v, JSON Schema = %v", typ, what, got, oracle)
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

// TestCompiledDifferential holds the compiled checks to the JSON Schema
// validator (the oracle) on every example under testdata/<type>/{valid,
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
// can see: the compiled checks and the validator used by several
// goroutines at once (differentialConcurrent).
func TestCompiledDifferential(t *testing.T) {
	if raceEnabled && os.Getenv(differentialChild) == "" {
		differentialConcurrent(t)
		differentialWithoutRace(t)
		return
	}
	for typ := range compiledTypes {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			differential(t, typ)
		})
	}
}

// differentialChild is set in the environment of the child go test that
// runs TestCompiledDifferential without the race detector.
const differentialChild = "CARDDRIFT_DIFFERENTIAL_CHILD"

// differentialWithoutRace runs TestCompiledDifferential in a child go test
// of this package built without the race detector, and fails with its
// output when it fails.
func differentialWithoutRace(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goBin, "test", "-count=1", "-timeout=30m", "-run=^TestCompiledDifferential$", "-v", ".")
	cmd.Env = append(os.Environ(), differentialChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("TestCompiledDifferential without the race detector: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "--- PASS: TestCompiledDifferential/") {
			t.Log(strings.TrimPrefix(line, "--- PASS: TestCompiledDifferential/"))
		}
	}
}

// differentialConcurrent holds the compiled checks to the validator on
// every example of every type, the types in parallel goroutines and each
// example twice at once: what the race detector can check of schemas'
// shared state.
func differentialConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for typ := range compiledTypes {
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

// FuzzCompiled mutates the data of inbound events (seeded with every
// example; committed corpus in testdata/fuzz/FuzzCompiled) and requires
// the compiled checks and the JSON Schema validator to agree: decision and
// field.
func FuzzCompiled(f *testing.F) {
	types := slices.Sorted(func(yield func(string) bool) {
		for typ := range compiledTypes {
			if !yield(typ) {
				return
			}
		}
	})
	for i, typ := range types {
		for _, data := range examples(f, typ) {
			f.Add(uint8(i), data)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		v, ok := parse(t, data)
		if !ok {
			return
		}
		agree(t, types[int(which)%len(types)], v, string(data))
	})
}
