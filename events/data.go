package events

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/carddrift/carddrift/detector"
)

// readData reads the data of an event of type typ into its Go type with
// x.r, which checks it against the schema as it goes. Members are matched
// by json name (the Go types are the one list of them); what the schema
// accepts and Go cannot hold is a violation of the field.
func (x *reading) readData(typ string) Data {
	i, ok := dataIndex[typ]
	if !ok {
		if x.r.Skip(); !x.r.Failed() {
			x.r.Violate("no Go type for this event type")
		}
		return nil
	}
	if x.data == nil {
		x.data = make([]reflect.Value, len(dataTypes))
	}
	if !x.data[i].IsValid() {
		x.data[i] = reflect.New(dataTypes[i].t).Elem()
	}
	v := x.data[i]
	v.SetZero()
	x.used, x.touches = v, 0
	p := v.Addr().Interface()
	if d, ok := p.(*Submitted); ok {
		d.Posture = detector.FailClosed
	}
	x.readStruct(v, dataTypes[i].fields)
	if d, ok := p.(*Drift); ok {
		d.TouchesKnown = x.touches == len(d.Findings)
	}
	return v.Interface().(Data)
}

// dataTypes are the Go types of the event types; dataIndex finds them.
var dataTypes, dataIndex = func() ([]dataType, map[string]int) {
	all := []Data{Submitted{}, Request{}, Status{}, Artifact{}, Error{},
		Drift{}, Pinned{}, Observed{}, Unreachable{}, Inconsistent{}}
	types := make([]dataType, len(all))
	index := make(map[string]int, len(all))
	for i, d := range all {
		t := reflect.TypeOf(d)
		types[i] = dataType{t: t, fields: fieldsOf(t)}
		index[d.EventType()] = i
	}
	return types, index
}()

type dataType struct {
	t      reflect.Type
	fields []field
}

type field struct {
	name  string
	index int
	read  func(x *reading, v reflect.Value)
}

func (x *reading) readStruct(v reflect.Value, fields []field) {
	for o := x.r.Object(); o.Next(); {
		k := o.Key()
		for i := range fields {
			if fields[i].name == k {
				fields[i].read(x, v.Field(fields[i].index))
				break
			}
		}
	}
}

func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			panic(fmt.Sprintf("events: %s.%s has no json name", t, f.Name))
		}
		read := readerOf(f.Type)
		if t == reflect.TypeFor[detector.Finding]() && name == "touches" {
			inner := read
			read = func(x *reading, v reflect.Value) { x.touches++; inner(x, v) }
		}
		out = append(out, field{name: name, index: i, read: read})
	}
	return out
}

// readerOf returns how to read a value of type t; an unknown type panics
// when the package is loaded.
func readerOf(t reflect.Type) func(x *reading, v reflect.Value) {
	switch t {
	case reflect.TypeFor[time.Time]():
		return func(x *reading, v reflect.Value) { *v.Addr().Interface().(*time.Time) = x.r.Time() }
	case reflect.TypeFor[json.RawMessage]():
		return func(x *reading, v reflect.Value) { *v.Addr().Interface().(*json.RawMessage) = x.r.Raw() }
	case reflect.TypeFor[[]string]():
		return func(x *reading, v reflect.Value) { *v.Addr().Interface().(*[]string) = x.r.Strings() }
	case reflect.TypeFor[map[string][]string]():
		return func(x *reading, v reflect.Value) {
			m := map[string][]string{}
			for o := x.r.Object(); o.Next(); {
				m[o.KeepKey()] = x.r.Strings()
			}
			*v.Addr().Interface().(*map[string][]string) = m
		}
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return func(x *reading, v reflect.Value) {
			if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(x.r.String())); err != nil {
				x.r.Violate(err.Error())
			}
		}
	}
	switch t.Kind() {
	case reflect.String:
		return func(x *reading, v reflect.Value) { v.SetString(x.r.String()) }
	case reflect.Bool:
		return func(x *reading, v reflect.Value) { v.SetBool(x.r.Bool()) }
	case reflect.Int:
		return func(x *reading, v reflect.Value) { v.SetInt(x.r.Int(math.MinInt32, math.MaxInt32)) }
	case reflect.Int64:
		return func(x *reading, v reflect.Value) { v.SetInt(x.r.Int(math.MinInt64, math.MaxInt64)) }
	case reflect.Interface:
		return func(x *reading, v reflect.Value) {
			if a := x.r.Any(); a != nil {
				v.Set(reflect.ValueOf(a))
			}
		}
	case reflect.Struct:
		fields := fieldsOf(t)
		return func(x *reading, v reflect.Value) { x.readStruct(v, fields) }
	case reflect.Pointer:
		fields := fieldsOf(t.Elem())
		return func(x *reading, v reflect.Value) {
			p := reflect.New(t.Elem())
			x.readStruct(p.Elem(), fields)
			v.Set(p)
		}
	case reflect.Slice:
		read := readerOf(t.Elem())
		return func(x *reading, v reflect.Value) {
			v.Set(reflect.MakeSlice(t, 0, 0))
			for a := x.r.Array(); a.Next(); {
				n := v.Len()
				v.Grow(1)
				v.SetLen(n + 1)
				read(x, v.Index(n))
			}
		}
	}
	panic("events: no reader for " + t.String())
}
