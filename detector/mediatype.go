package detector

import (
	"slices"
	"strings"
)

// Media types and input/output modes.
//
// Cards declare modes as media types ("text/plain", "image/*"), sometimes with
// parameters ("text/plain; charset=utf-8"), in any case, and older cards use
// the legacy part kinds of A2A v0.1/v0.2. NormalizeMediaType maps all of them
// onto one comparable form:
//
//   - surrounding space is trimmed and the result is lower-cased (media types
//     are case-insensitive, RFC 2045 §5.1);
//   - parameters are dropped: they never change what a type covers;
//   - "text" (legacy TextPart) means "text/plain";
//   - "data" (legacy DataPart, structured JSON) means "application/json";
//   - "file" (legacy FilePart, which may carry any media type) means "*/*";
//   - "*" means "*/*".
//
// Any other value, including values without a slash such as a vendor's
// "task-status", is kept as it is (lower-cased) and only covers itself.

// NormalizeMediaType returns the comparable form of a declared mode or media
// type; see the mapping above. It returns "" for an empty or blank value.
func NormalizeMediaType(s string) string {
	if i := strings.IndexByte(s, ';'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if !isLowerASCII(s) {
		s = strings.ToLower(s)
	}
	if i := strings.IndexByte(s, '/'); i > 0 {
		// "type / subtype" is not valid, but trimming around the slash costs
		// nothing and keeps a stray space from looking like a change.
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

// Covers reports whether any of modes covers mediaType. Both sides are
// normalised first. "*/*" covers everything, "type/*" covers every subtype of
// type (and "type/*" itself), and any other mode covers only an equal type. A
// wildcard mediaType is covered only by an equal or wider wildcard: ["image/png"]
// does not cover "image/*". An empty mediaType is never covered.
func Covers(modes []string, mediaType string) bool {
	t := NormalizeMediaType(mediaType)
	return t != "" && slices.ContainsFunc(modes, func(m string) bool { return coversNormalized(NormalizeMediaType(m), t) })
}

// coversNormalized reports whether mode m covers media type t; both are
// normalised.
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

// normalizeModes returns the normalised, sorted, de-duplicated modes with every
// mode that another mode of the list covers removed ("*/*" absorbs
// "text/plain"). Two lists with the same result cover exactly the same media
// types.
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

// modeDelta compares two declared mode lists by coverage. removed holds the
// modes of before that after no longer covers, added the modes of after that
// before did not cover; both keep the declared spelling and order and are nil
// when empty. A change of order, case, parameters, legacy spelling or
// duplicates yields neither.
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

// uncovered returns the modes of declared (de-duplicated by normal form) that
// no mode of the normalised list by covers.
func uncovered(declared, by []string) []string {
	var out []string
	var seen []string
	for _, m := range declared {
		n := NormalizeMediaType(m)
		if n == "" || slices.Contains(seen, n) {
			continue
		}
		seen = append(seen, n)
		if !coveredByNormalized(by, n) {
			out = append(out, m)
		}
	}
	return out
}

func coveredByNormalized(modes []string, t string) bool {
	return slices.ContainsFunc(modes, func(m string) bool { return coversNormalized(m, t) })
}
