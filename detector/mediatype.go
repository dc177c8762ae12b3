package detector

import (
	"slices"
	"strings"
)

// NormalizeMediaType returns the comparable form of a declared mode or media
// type: trimmed, lower-cased (RFC 2045 §5.1), parameters dropped, and the
// v0.1/v0.2 part kinds mapped: "text" is text/plain, "data" application/json,
// "file" and "*" are */*. Any other value only covers itself; "" stays "".
func NormalizeMediaType(s string) string {
	if i := strings.IndexByte(s, ';'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if !isLowerASCII(s) {
		s = strings.ToLower(s)
	}
	if i := strings.IndexByte(s, '/'); i > 0 {
		// "type / subtype" is not valid: a stray space is not a change.
		if strings.IndexByte(s, ' ') >= 0 || strings.IndexByte(s, '\t') >= 0 {
			s = strings.TrimSpace(s[:i]) + "/" + strings.TrimSpace(s[i+1:])
		}
		return s
	}
	switch s {
	case "text":
		return "text/plain"
	case "data":
		return "application/json"
	case "file", "*":
		return "*/*"
	}
	return s
}

func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return false
		}
	}
	return true
}

// Covers reports whether any of modes covers mediaType, both normalised:
// "*/*" covers everything, "type/*" every subtype of type (and itself), any
// other mode only an equal type. An empty mediaType is never covered.
func Covers(modes []string, mediaType string) bool {
	t := NormalizeMediaType(mediaType)
	return t != "" && slices.ContainsFunc(modes, func(m string) bool { return coversNormalized(NormalizeMediaType(m), t) })
}

func coversNormalized(m, t string) bool {
	if m == "" {
		return false
	}
	if m == t || m == "*/*" {
		return true
	}
	if typ, ok := strings.CutSuffix(m, "/*"); ok {
		return len(t) > len(typ) && t[len(typ)] == '/' && strings.HasPrefix(t, typ)
	}
	return false
}

// normalizeModes returns the normalised, sorted, distinct modes that no other
// covers: lists with the same result cover the same media types.
func normalizeModes(modes []string) []string {
	out := make([]string, 0, len(modes))
	for _, m := range modes {
		if n := NormalizeMediaType(m); n != "" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	kept := out[:0]
	for _, m := range out {
		if !slices.ContainsFunc(out, func(o string) bool { return o != m && coversNormalized(o, m) }) {
			kept = append(kept, m)
		}
	}
	return kept
}

// modeDelta compares two declared mode lists by coverage: the modes of before
// that after no longer covers and of after that before did not, as declared
// (nil when none).
func modeDelta(before, after []string) (removed, added []string) {
	if slices.Equal(before, after) {
		return nil, nil
	}
	nb, na := normalizeModes(before), normalizeModes(after)
	if slices.Equal(nb, na) {
		return nil, nil
	}
	return uncovered(before, na), uncovered(after, nb)
}

// uncovered returns the modes of declared (distinct in normal form) that no
// mode of the normalised list by covers.
func uncovered(declared, by []string) []string {
	var out, seen []string
	for _, m := range declared {
		n := NormalizeMediaType(m)
		if n == "" || slices.Contains(seen, n) {
			continue
		}
		seen = append(seen, n)
		if !slices.ContainsFunc(by, func(b string) bool { return coversNormalized(b, n) }) {
			out = append(out, m)
		}
	}
	return out
}
