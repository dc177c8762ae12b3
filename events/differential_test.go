package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events"
	"github.com/carddrift/carddrift/schemas"
)

// oracle compiles the current schema of each type with the JSON Schema
// validator (a test-only dependency): what Encode's validation is held to.
var oracle = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	for _, typ := range events.Types {
		s, err := schemas.Lookup(typ)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Source()))
		if err != nil {
			return nil, err
		}
		if err := c.AddResource(s.ID, doc); err != nil {
			return nil, err
		}
		if out[typ], err = c.Compile(s.ID); err != nil {
			return nil, err
		}
	}
	return out, nil
})

// agreeEncode holds Encode's validation to the JSON Schema validator on d
// as json.Marshal writes it: Encode accepts d exactly when the validator
// accepts its JSON, and what it accepts Decode reads back. It reports
// whether d could be marshalled at all.
func agreeEncode(t *testing.T, d events.Data, what string) bool {
	t.Helper()
	o, err := oracle()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(d)
	if err != nil {
		return false // Encode refuses it before validating
	}
	tree, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: json.Marshal wrote what the validator cannot read: %v", what, err)
	}
	verr := o[d.EventType()].Validate(tree)
	m, err := events.Encode(events.Event{ID: "e1", Source: "carddrift/test", Data: d}, events.Binary)
	switch {
	case errors.Is(err, events.ErrSchemaViolation) && verr == nil:
		t.Errorf("%s %s: Encode rejects (%v), JSON Schema accepts\n%s", d.EventType(), what, err, data)
	case err == nil && verr != nil:
		t.Errorf("%s %s: Encode accepts, JSON Schema rejects: %v\n%s", d.EventType(), what, verr, data)
	case err == nil:
		if _, err := events.Decode(events.NATSMsg(m)); err != nil && !cannotHold(err) {
			t.Errorf("%s %s: Decode of what Encode wrote: %v\n%s", d.EventType(), what, err, data)
		}
	}
	return true
}

// cannotHold reports a decode error for a value the schema accepts and
// the Go type cannot hold: an integer beyond its range, a leap second.
func cannotHold(err error) bool {
	var de *events.DecodeError
	return errors.As(err, &de) && (strings.HasPrefix(de.Reason, "integer out of range") || strings.HasPrefix(de.Reason, "unsupported date-time"))
}

// Pools of values the mutator sets leaves to: each JSON type's edge cases,
// the patterns' and formats' near misses, the enums.
var (
	poolStrings = []string{
		"", "x", "é", "a b", "\xff", "x\xffy", "<&>", "a&b", "a>b", "\x00\x1f\x7f", "\u2028", "\"q\\", strings.Repeat("a", 64), strings.Repeat("a", 65),
		strings.Repeat("a", 128), strings.Repeat("a", 129), strings.Repeat("é", 256), strings.Repeat("a", 257),
		strings.Repeat("a", 2049), strings.Repeat("é", 4096), strings.Repeat("é", 4097),
		"https://a.example", "http://127.0.0.1:8080/a2a", "https://a.example/.well-known/agent-card.json", "https://[::1]:8443",
		"https://[fe80::1%25en0]/", "https://::1/", "https://a.example:x/", "HTTPS://A.example/x", "ftp://a.example",
		"https://", "https:///x", "https:// a", "http://a/%zz", "http://a/%41", "https://a.example/p?q#f", "https://é.example/",
		"https://a.example:/", "http://a:99999", "https://a\xff.example", "https://a.example/\xff", "http://a/b c",
		"https://" + strings.Repeat("a", 2040), "https://a@b.example/", "https://a.example\\x",
		"sha256:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("A", 64), "sha256:" + strings.Repeat("a", 63),
		"working", "input-required", "TASK_STATE_AUTH_REQUIRED", "9lives", "a" + strings.Repeat("b", 63), "a" + strings.Repeat("b", 64),
		"fail-closed", "degrade", "Degrade", "abort", "replan", "continue", "breaking", "info",
		"client-card", "client-digest", "first-fetch", "trusted", "jku", "verified", "no-key",
		"skill-removed", "Skill-removed", "skill--removed", "skill-", "timeout",
		"/a/b", "/a~2", "a", "/~1x~0", "/", strings.Repeat("A", 43), strings.Repeat("_", 42) + "-", strings.Repeat("a", 44),
		"message/stream", "text/plain", "a2a.task.request",
	}
	poolInts  = []int64{0, 1, -1, 2, 200, 304, 404, 2147483647, 2147483648, -2147483648, -2147483649, math.MaxInt64, math.MinInt64}
	poolTimes = []time.Time{
		{}, t0, t0.In(time.FixedZone("x", 5*3600+1800)), t0.In(time.FixedZone("lmt", 3208)), t0.In(time.FixedZone("w", -(23*3600 + 59*60))),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 6, 30, 23, 59, 59, 0, time.FixedZone("z", 0)),
		time.Unix(0, 0).In(time.FixedZone("far", 25*3600)),
	}
	poolDurations = []time.Duration{0, 2 * time.Minute, 90 * time.Minute, -time.Second, time.Nanosecond, 500 * time.Microsecond, math.MaxInt64}
	poolAny       = []any{nil, true, "x", 1.5, json.Number("7"), []any{"a"}, map[string]any{"k": 1}}
	poolRaw       = []json.RawMessage{nil, json.RawMessage(`{}`), json.RawMessage(`{"a":[1,{"b":null}]}`), json.RawMessage(`[1]`), json.RawMessage(`"x"`)}
)

var (
	typeTime     = reflect.TypeFor[time.Time]()
	typeRaw      = reflect.TypeFor[json.RawMessage]()
	typeDuration = reflect.TypeFor[events.Duration]()
	typeSeverity = reflect.TypeFor[detector.Severity]()
)

// leaves lists the settable places of v (an addressable value): every
// string, number, bool, time, any, slice, map and pointer, at any depth.
func leaves(v reflect.Value, out *[]reflect.Value) {
	switch v.Type() {
	case typeTime, typeRaw:
		*out = append(*out, v)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				leaves(v.Field(i), out)
			}
		}
	case reflect.Slice:
		*out = append(*out, v)
		for i := range v.Len() {
			leaves(v.Index(i), out)
		}
	case reflect.Pointer:
		*out = append(*out, v)
		if !v.IsNil() {
			leaves(v.Elem(), out)
		}
	default:
		*out = append(*out, v)
	}
}

// set gives the leaf v a value from the pools, chosen by rng.
func set(rng *rand.Rand, v reflect.Value) {
	switch v.Type() {
	case typeTime:
		v.Set(reflect.ValueOf(poolTimes[rng.IntN(len(poolTimes))]))
		return
	case typeRaw:
		v.Set(reflect.ValueOf(poolRaw[rng.IntN(len(poolRaw))]))
		return
	case typeDuration:
		v.SetInt(int64(poolDurations[rng.IntN(len(poolDurations))]))
		return
	case typeSeverity:
		v.SetInt(int64(rng.IntN(5)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(poolStrings[rng.IntN(len(poolStrings))])
	case reflect.Int, reflect.Int64, reflect.Int32:
		i := poolInts[rng.IntN(len(poolInts))]
		if v.OverflowInt(i) {
			i = 0
		}
		v.SetInt(i)
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Interface:
		if x := poolAny[rng.IntN(len(poolAny))]; x != nil {
			v.Set(reflect.ValueOf(x))
		} else {
			v.SetZero()
		}
	case reflect.Pointer:
		if rng.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(rng, p.Elem())
		v.Set(p)
	case reflect.Slice:
		n := []int{0, 0, 1, 2, 3, 64, 65}[rng.IntN(7)]
		if n == 0 && rng.IntN(2) == 0 {
			v.SetZero() // nil
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(rng, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if rng.IntN(2) == 0 {
			v.SetZero()
			return
		}
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(3) {
			k := reflect.New(v.Type().Key()).Elem()
			x := reflect.New(v.Type().Elem()).Elem()
			set(rng, k)
			set(rng, x)
			m.SetMapIndex(k, x)
		}
		v.Set(m)
	}
}

// fill sets every leaf of v from the pools.
func fill(rng *rand.Rand, v reflect.Value) {
	var ls []reflect.Value
	leaves(v, &ls)
	for _, l := range ls {
		if l.Kind() != reflect.Slice && l.Kind() != reflect.Pointer || rng.IntN(4) == 0 {
			set(rng, l)
		}
	}
}

// deepCopy copies v so that mutating the copy leaves v alone.
func deepCopy(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	switch {
	case v.Type() == typeTime:
		out.Set(v)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(deepCopy(v.Field(i)))
			} else {
				out.Field(i).Set(v.Field(i)) // never mutated: unexported
			}
		}
	case v.Kind() == reflect.Slice && !v.IsNil():
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			s.Index(i).Set(deepCopy(v.Index(i)))
		}
		out.Set(s)
	case v.Kind() == reflect.Pointer && !v.IsNil():
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(deepCopy(v.Elem()))
		out.Set(p)
	default:
		out.Set(v)
	}
	return out
}

// mutant returns a copy of base with n of its leaves set from the pools.
func mutant(rng *rand.Rand, base events.Data, n int) events.Data {
	v := deepCopy(reflect.ValueOf(base))
	for range n {
		var ls []reflect.Value
		leaves(v, &ls)
		set(rng, ls[rng.IntN(len(ls))])
	}
	return v.Interface().(events.Data)
}

// typedBases are the samples, a fully populated variant of each (every
// optional member set, signers included) and the smallest valid data.
func typedBases() []events.Data {
	signer := &detector.Signature{KeyID: "k1", Alg: "ES256", JKU: "https://a.example/jwks", Thumbprint: strings.Repeat("A", 43),
		Source: "trusted", Verified: true, Reason: "verified"}
	full := []events.Data{
		events.Pinned{TaskID: "t", AgentURL: "https://a.example", CardURL: "https://a.example/c", Digest: digestA, Fingerprint: fpA,
			Source: events.PinFirstFetch, Trigger: events.Trigger{EventID: "e", Type: events.TypeSubmitted, Source: "s"}, Signer: signer},
		events.Pinned{TaskID: "t", AgentURL: "https://a.example", Digest: digestA, Source: events.PinClientDigest},
		events.Unreachable{AgentURL: "https://a.example", CardURL: "https://a.example/c", Reason: "timeout", Detail: "d", TaskID: "t",
			AttemptedAt: t0, Trigger: events.Trigger{EventID: "e", Type: events.TypeRequest}},
		events.Unreachable{AgentURL: "https://a.example", CardURL: "https://a.example/c", Reason: "timeout"},
		events.Status{TaskID: "t", AgentURL: "https://a.example", State: "working"},
		events.Drift{TaskID: "t", AgentURL: "https://a.example", CardURL: "https://a.example/c",
			Pinned:  events.CardRef{Digest: digestA},
			Live:    events.CardRef{Digest: digestB, Fingerprint: fpB, ETag: "e", FetchedAt: t0, Signer: signer},
			Verdict: detector.Verdict{Action: detector.Continue, Posture: detector.Degrade},
			Trigger: events.Trigger{EventID: "e", Type: events.TypeStatus}},
		// contract v1.3: card.observed standing for the fetches since a heartbeat
		events.Observed{AgentURL: "https://a.example", CardURL: "https://a.example/c", Digest: digestA, Status: 304, ETag: "e",
			FetchedAt: t0, LatencyMs: 3, Fetches: 150, Since: t0.Add(-5 * time.Minute)},
	}
	return append(samples(), full...)
}

// TestEncodeDifferential holds Encode's validation to the JSON Schema
// validator on every sample and thousands of mutants of each (one
// to three leaves set from pools of edge values, at any depth, slices and
// pointers included). A member a data type gains is mutated too, so a
// schema that does not describe it fails here.
func TestEncodeDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 27))
	n, marshalled := 0, 0
	for _, base := range typedBases() {
		if !agreeEncode(t, base, "sample") {
			t.Fatalf("sample %T does not marshal", base)
		}
		for i := range 1500 {
			d := mutant(rng, base, 1+i%3)
			if agreeEncode(t, d, fmt.Sprintf("mutant %d of %T", i, base)) {
				marshalled++
			}
			n++
			if t.Failed() && n > 50 {
				t.FailNow()
			}
		}
	}
	t.Logf("%d mutants, %d marshalled and compared", n, marshalled)
}

// FuzzEncodeDifferential is TestEncodeDifferential driven by the fuzzer:
// which sample, the mutator's seed and how many leaves it sets (committed
// corpus in testdata/fuzz/FuzzEncodeDifferential).
func FuzzEncodeDifferential(f *testing.F) {
	bases := typedBases()
	for i := range bases {
		f.Add(uint8(i), uint64(i)*7919, uint8(1))
		f.Add(uint8(i), uint64(i)*104729+1, uint8(4))
	}
	f.Fuzz(func(t *testing.T, which uint8, seed uint64, n uint8) {
		rng := rand.New(rand.NewPCG(seed, uint64(n)))
		d := mutant(rng, bases[int(which)%len(bases)], int(n%8))
		agreeEncode(t, d, fmt.Sprintf("seed %d n %d", seed, n))
	})
}

// TestPlainSource holds plainSource to CheckSource and url.Parse: every
// source it passes, CheckSource accepts and url.Parse gives back
// unchanged; and the usual sources pass it.
func TestPlainSource(t *testing.T) {
	for _, s := range []string{"carddrift-demo-client", "carddrift/worker-1", "urn:client:planner-7", "urn:carddrift:bench", "a", "a.b~c_d"} {
		if !events.PlainSource(s) {
			t.Errorf("plainSource(%q) = false", s)
		}
	}
	alphabet := "aZ09-._~:/+%?#@ \xff"
	rng := rand.New(rand.NewPCG(1, 2))
	tried := []string{"", ":", "a:", "a::b", "A:b", "1a:b", "a/", "/a", "a//b", "//a", ".:a", "a:/b", "a:b/c", "./a", "a:b?c"}
	for range 20000 {
		b := make([]byte, 1+rng.IntN(8))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		tried = append(tried, string(b))
	}
	passed := 0
	for _, s := range tried {
		if !events.PlainSource(s) {
			continue
		}
		passed++
		if err := events.CheckSource(s); err != nil {
			t.Errorf("plainSource(%q) = true, CheckSource: %v", s, err)
		}
		if u, err := url.Parse(s); err != nil || u.String() != s {
			t.Errorf("plainSource(%q) = true, url.Parse gives %v, %v", s, u, err)
		}
	}
	if passed < 100 {
		t.Errorf("only %d of %d random sources passed plainSource", passed, len(tried))
	}
}

// TestMarshalDataIsJSONMarshal holds Encode's direct writer of the
// lifecycle events' data to json.Marshal, byte for byte, on every base
// and thousands of mutants (strings with escapes, invalid UTF-8, HTML
// characters, U+2028, nil and long slices).
func TestMarshalDataIsJSONMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 21))
	n := 0
	for _, base := range typedBases() {
		for i := range 1500 {
			d := base
			if i > 0 {
				d = mutant(rng, base, 1+i%3)
			}
			want, werr := json.Marshal(d)
			got, gerr := events.MarshalData(d)
			if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("%T: marshalData = %s, %v; json.Marshal = %s, %v", d, got, gerr, want, werr)
			}
			n++
		}
	}
	t.Logf("%d values compared", n)
}
