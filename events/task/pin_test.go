package task

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/carddrift/carddrift/detector"
)

// TestCloneCoversReferenceFields fails when Pin gains a field that shares
// memory (slice, map, pointer) which Clone does not copy: the pin cache
// hands out clones.
func TestCloneCoversReferenceFields(t *testing.T) {
	known := map[string]bool{
		"Requirements.InputModes":  true,
		"Requirements.OutputModes": true,
		"Requirements.Security":    true,
		"Requirements.Scopes":      true,
		"Requirements.Extensions":  true,
		"Reported":                 true,
		"Signatures":               true,
	}
	var walk func(typ reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := prefix + f.Name
			switch f.Type.Kind() {
			case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func:
				if !known[name] {
					t.Errorf("Pin.%s is a %s: teach Pin.Clone to copy it", name, f.Type.Kind())
				}
			case reflect.Struct:
				if f.Type.PkgPath() != "time" {
					walk(f.Type, name+".")
				}
			}
		}
	}
	walk(reflect.TypeOf(Pin{}), "")

	p := Pin{TaskID: "t", Reported: []string{"a"}, Signatures: []detector.Signature{{KeyID: "k"}}, Requirements: detector.Requirements{
		InputModes: []string{"x"}, OutputModes: []string{"y"}, Security: []string{"s"},
		Scopes: map[string][]string{"s": {"r"}}, Extensions: []string{"e"},
	}}
	c := p.Clone()
	c.Signatures[0].KeyID = "!"
	c.Reported[0], c.Requirements.InputModes[0], c.Requirements.OutputModes[0] = "!", "!", "!"
	c.Requirements.Security[0], c.Requirements.Extensions[0], c.Requirements.Scopes["s"][0] = "!", "!", "!"
	if !reflect.DeepEqual(p, Pin{TaskID: "t", Reported: []string{"a"}, Signatures: []detector.Signature{{KeyID: "k"}}, Requirements: detector.Requirements{
		InputModes: []string{"x"}, OutputModes: []string{"y"}, Security: []string{"s"},
		Scopes: map[string][]string{"s": {"r"}}, Extensions: []string{"e"},
	}}) {
		t.Fatalf("changing a clone changed the original: %+v", p)
	}
}

// TestPinRecordFormat: the pin's JSON is the KV record; its field names are
// those of the records carddrift wrote before the task core existed, so a
// store written by an older version still reads.
func TestPinRecordFormat(t *testing.T) {
	old := `{"taskId":"t1","agentUrl":"https://a","cardUrl":"https://a/.well-known/agent-card.json","digest":"sha256:aa","fingerprint":"sha256:bb","pinnedAt":"2026-01-02T03:04:05Z","source":"client-card","requirements":{"skillId":"s","streaming":true,"posture":"fail-closed"},"schemaErrorAt":"2026-01-02T03:05:00Z","schemaErrorCode":-32602,"submittedSeq":7,"schemaErrorSeq":9,"retrySeq":11,"retryMethod":"message/send","retryAttempt":2,"liveDigest":"sha256:cc","reported":["x"]}`
	var p Pin
	if err := json.Unmarshal([]byte(old), &p); err != nil {
		t.Fatal(err)
	}
	want := Pin{
		TaskID: "t1", AgentURL: "https://a", CardURL: "https://a/.well-known/agent-card.json",
		Digest: "sha256:aa", Fingerprint: "sha256:bb", PinnedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Source: "client-card", Requirements: detector.Requirements{SkillID: "s", Streaming: true, Posture: detector.FailClosed},
		SchemaErrorAt: time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC), SchemaErrorCode: -32602,
		SubmittedSeq: 7, SchemaErrorSeq: 9, RetrySeq: 11, RetryMethod: "message/send", RetryAttempt: 2,
		LiveDigest: "sha256:cc", Reported: []string{"x"},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("decoded %+v\nwant    %+v", p, want)
	}
}

// TestDetachSharesNoMemory: every string of a detached pin is a copy, in
// every field, slice and map (keys too), and the content is the same.
func TestDetachSharesNoMemory(t *testing.T) {
	body := strings.Repeat("b", 64)
	s := func(i int) string { return body[i : i+1] } // slices of body
	p := Pin{TaskID: s(0), AgentURL: s(1), CardURL: s(2), Digest: s(3), Fingerprint: s(4), CardVersion: s(5),
		ProtocolVersion: s(6), ETag: s(7), Source: s(8), Extended: s(9), RetryMethod: s(10), LiveDigest: s(11),
		Reported: []string{s(12)}, Signatures: []detector.Signature{{KeyID: s(13), Alg: s(14), Reason: s(15)}},
		Requirements: detector.Requirements{SkillID: s(16), InputModes: []string{s(17)}, OutputModes: []string{s(18)},
			Security: []string{s(19)}, Scopes: map[string][]string{s(20): {s(21)}}, Extensions: []string{s(22)}, Posture: detector.Posture(s(23))}}
	d := p.Detach()
	if !reflect.DeepEqual(d, p) {
		t.Fatalf("Detach() = %+v, want %+v", d, p)
	}
	lo, hi := uintptr(unsafe.Pointer(unsafe.StringData(body))), uintptr(unsafe.Pointer(unsafe.StringData(body)))+uintptr(len(body))
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.String:
			if at := uintptr(unsafe.Pointer(unsafe.StringData(v.String()))); at >= lo && at < hi {
				t.Errorf("Detach().%s shares the original's memory", path)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i), path+"."+v.Type().Field(i).Name)
				}
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i), path+"[]")
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Key(), path+" key")
				walk(it.Value(), path+"[key]")
			}
		}
	}
	walk(reflect.ValueOf(d), "")
}
