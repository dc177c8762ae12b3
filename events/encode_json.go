package events

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// marshalData is json.Marshal(d), written directly, from the fields
// readData reads, for the data types whose members are all strings,
// integers and string lists (status, request, artifact and error: the
// lifecycle events clients send most): the same bytes
// (TestMarshalDataIsJSONMarshal, and TestEncodeGolden for Encode as a
// whole) without encoding/json's reflection over the type. Other types go
// to json.Marshal.
func marshalData(d Data) ([]byte, error) {
	i, ok := dataIndex[d.EventType()]
	if !ok || !dataTypes[i].flat {
		return json.Marshal(d)
	}
	v := reflect.ValueOf(d)
	b := append(make([]byte, 0, 256), '{')
	for _, f := range dataTypes[i].fields {
		fv := v.Field(f.index)
		if f.omitEmpty && fv.IsZero() {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(appendString(b, f.name), ':')
		switch fv.Kind() {
		case reflect.String:
			b = appendString(b, fv.String())
		case reflect.Int:
			b = strconv.AppendInt(b, fv.Int(), 10)
		case reflect.Slice:
			if fv.IsNil() {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '[')
			for j := range fv.Len() {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendString(b, fv.Index(j).String())
			}
			b = append(b, ']')
		}
	}
	return append(b, '}'), nil
}

// flat reports whether json.Marshal writes struct type t as marshalData
// does: every member a string, an int or a string list (exactly those
// types), only strings omitempty, nothing the type marshals itself.
func flat(t reflect.Type) bool {
	if t.Implements(reflect.TypeFor[json.Marshaler]()) {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Type == reflect.TypeFor[string]() && (opts == "" || opts == "omitempty"):
		case (f.Type == reflect.TypeFor[int]() || f.Type == reflect.TypeFor[[]string]()) && opts == "":
		default:
			return false
		}
	}
	return true
}

// appendString appends s as encoding/json writes a string: as it is when
// every byte is printable ASCII that json.Marshal does not escape (it
// escapes '"', '\\' and, as HTML-safe, '<', '>' and '&'); otherwise
// json.Marshal writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
