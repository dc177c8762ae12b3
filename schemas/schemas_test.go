package schemas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
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

// TestGeneratedCurrent fails when enums_gen.go is not what the generator
// writes from the schema files (run go generate in schemas).
func TestGeneratedCurrent(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	want, err := exec.Command(goBin, "run", "./internal/gen", "-o", "-").Output()
	if err != nil {
		t.Fatalf("go run ./internal/gen: %v", err)
	}
	got, err := os.ReadFile("enums_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("enums_gen.go is not current: run go generate ./schemas")
	}
}
