package schemas_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

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
