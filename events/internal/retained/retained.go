package retained

import (
	"reflect"
	"time"
	"unsafe"
)

// MapOverhead is a map header and first bucket beyond its entries.
const MapOverhead = 48

// Size returns the estimated bytes v retains; Size(nil) is 0.
func Size(v any) int64 {
	if v == nil {
		return 0
	}
	rv := reflect.ValueOf(v)
	s := sizer{seen: make(map[unsafe.Pointer]struct{})}
	return int64(rv.Type().Size()) + s.reach(rv)
}

type sizer struct {
	seen map[unsafe.Pointer]struct{}
}

var timeType = reflect.TypeFor[time.Time]()

// once reports whether p is seen for the first time.
func (s *sizer) once(p unsafe.Pointer) bool {
	if _, ok := s.seen[p]; ok {
		return false
	}
	s.seen[p] = struct{}{}
	return true
}

// reach returns the bytes v reaches beyond its own (inline) size.
func (s *sizer) reach(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.String:
		return alloc(int64(v.Len()))
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 {
			return 0
		}
		if !s.once(v.UnsafePointer()) {
			return 0
		}
		n := alloc(int64(v.Cap()) * int64(v.Type().Elem().Size()))
		if flat(v.Type().Elem()) {
			return n
		}
		for i := range v.Len() {
			n += s.reach(v.Index(i))
		}
		return n
	case reflect.Array:
		if flat(v.Type().Elem()) {
			return 0
		}
		var n int64
		for i := range v.Len() {
			n += s.reach(v.Index(i))
		}
		return n
	case reflect.Pointer:
		if v.IsNil() || !s.once(v.UnsafePointer()) {
			return 0
		}
		return alloc(int64(v.Type().Elem().Size())) + s.reach(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		n := s.reach(e)
		if e.Kind() != reflect.Pointer && e.Kind() != reflect.Map {
			n += alloc(int64(e.Type().Size())) // boxed
		}
		return n
	case reflect.Map:
		if v.IsNil() || !s.once(v.UnsafePointer()) {
			return 0
		}
		kt, vt := v.Type().Key(), v.Type().Elem()
		n := MapOverhead + 2*int64(v.Len())*int64(kt.Size()+vt.Size())
		if flat(kt) && flat(vt) {
			return n
		}
		it := v.MapRange()
		for it.Next() {
			n += s.reach(it.Key()) + s.reach(it.Value())
		}
		return n
	case reflect.Struct:
		if v.Type() == timeType {
			return 0
		}
		var n int64
		for i := range v.NumField() {
			n += s.reach(v.Field(i))
		}
		return n
	default:
		return 0 // numbers, bools; funcs, channels and unsafe pointers are not followed
	}
}

// sizeClasses are the Go allocator's small object sizes (runtime/sizeclasses.go).
var sizeClasses = [...]int64{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048,
	2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880,
	12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// alloc is n rounded to its size class, or to 8 KiB pages above 32 KiB.
func alloc(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if n > sizeClasses[len(sizeClasses)-1] {
		return (n + 8191) &^ 8191
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if sizeClasses[mid] < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return sizeClasses[lo]
}

// flat reports whether values of t reach nothing beyond their own size.
func flat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return flat(t.Elem())
	case reflect.Struct:
		if t == timeType {
			return true
		}
		for i := range t.NumField() {
			if !flat(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
