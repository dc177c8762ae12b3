package events

import (
	"bytes"
	"encoding/json"
	"math"
	"sync"
	"unsafe"

	"github.com/carddrift/carddrift/detector/jcs"
)

// MaxDepth is the deepest nesting of arrays and objects Decode accepts in a
// message (the structured envelope counts as one level).
const MaxDepth = 64

// jsonLimits are the limits of the scanner: no size limit of its own (the
// NATS server bounds a message), MaxDepth levels.
var jsonLimits = jcs.Limits{MaxBytes: math.MaxInt, MaxDepth: MaxDepth}

// Messages are read with jcs.Scanner, the strict JSON scanner carddrift's
// canonicalizer uses: the same rules (valid UTF-8, no escaped lone
// surrogates, no duplicate keys, at most MaxDepth levels) and the same
// *jcs.SyntaxError, which Decode and Encode keep in their error chains.
// Scanners are pooled, so that scanning allocates nothing of its own.
var scanners = sync.Pool{New: func() any { return new(jcs.Scanner) }}

func getScanner(data []byte) *jcs.Scanner {
	sc := scanners.Get().(*jcs.Scanner)
	sc.Reset(data, jsonLimits) // cannot fail: there is no size limit
	return sc
}

func putScanner(sc *jcs.Scanner) {
	sc.Reset(nil, jcs.Limits{})
	scanners.Put(sc)
}

// tree builds, from a scanner, the value tree the schema validator takes
// (map[string]any, []any, string, json.Number, bool, nil). It can record
// the byte span of one member of the object at a given depth, so that the
// card of a submitted event is handed on byte for byte without parsing
// twice. The strings of the tree share no memory with the message: either
// the scanner reads a copy the tree owns (owned: a small message is copied
// once, and its strings are substrings of the copy) or each string is
// copied out on its own.
type tree struct {
	sc    *jcs.Scanner
	owned bool // the scanner's input is the tree's own copy

	capKey   string // member to capture ("" for none)
	capDepth int    // depth of the object whose member is captured
	capStart int
	capEnd   int
}

// parseTree parses data, one JSON value and nothing else, into a tree and
// returns the bytes of the member capKey of the top-level object ("" for
// none; nil if it is absent). owned says that data is the caller's to give
// away (nothing else holds or writes it): the tree's strings may then be
// substrings of it.
func parseTree(data []byte, capKey string, owned bool) (any, []byte, error) {
	sc := getScanner(data)
	defer putScanner(sc)
	t := tree{sc: sc, owned: owned, capKey: capKey, capDepth: 1}
	v, err := t.value()
	if err == nil {
		err = sc.End()
	}
	if err != nil {
		return nil, nil, err
	}
	return v, t.captured(data), nil
}

// maxOwnedCopy is the largest message Decode copies whole, so that the
// strings of its tree are substrings of one copy instead of one allocation
// each. A string of the event keeps the copy alive, which for a message
// this small costs less than the allocations it saves; larger messages
// (a submitted event with its card) copy each string out.
const maxOwnedCopy = 2048

// ownCopy returns a copy of b that the caller owns and true when b is small
// enough to copy whole (see maxOwnedCopy), b and false otherwise.
func ownCopy(b []byte) ([]byte, bool) {
	if len(b) > maxOwnedCopy {
		return b, false
	}
	return bytes.Clone(b), true
}

// captured returns the bytes of the captured member in data, nil if none
// was seen.
func (t *tree) captured(data []byte) []byte {
	if t.capEnd == 0 {
		return nil
	}
	return data[t.capStart:t.capEnd]
}

func (t *tree) value() (any, error) {
	k, s, err := t.sc.Value()
	if err != nil {
		return nil, err
	}
	switch k {
	case jcs.Object:
		return t.object()
	case jcs.Array:
		return t.array()
	case jcs.String:
		if !t.sc.Escaped() && len(s) <= maxKnownValue {
			if v, ok := knownValues()[s]; ok {
				return v, nil // boxed once, so that returning it allocates nothing
			}
		}
		return t.str(s), nil
	case jcs.Number:
		if t.owned {
			return json.Number(s), nil
		}
		return json.Number(clone(s)), nil
	case jcs.True:
		return true, nil
	case jcs.False:
		return false, nil
	}
	return nil, nil
}

func (t *tree) object() (any, error) {
	m := make(map[string]any, 8)
	for {
		k, more, err := t.sc.NextKey()
		if err != nil {
			return nil, err
		}
		if !more {
			return m, nil
		}
		k = t.key(k)
		start := t.sc.Pos()
		v, err := t.value()
		if err != nil {
			return nil, err
		}
		if t.capKey != "" && t.sc.Depth() == t.capDepth && k == t.capKey {
			t.capStart, t.capEnd = start, t.sc.Pos()
		}
		m[k] = v
	}
}

func (t *tree) array() (any, error) {
	a := make([]any, 0, 4)
	for {
		more, err := t.sc.NextElem()
		if err != nil {
			return nil, err
		}
		if !more {
			return a, nil
		}
		v, err := t.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
}

// knownKeys interns the member names of carddrift events, so that parsing
// them allocates no key strings.
var knownKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"taskId", "agentUrl", "skillId", "requires", "streaming", "pushNotifications",
		"inputModes", "outputModes", "security", "posture", "idempotent", "card",
		"cardDigest", "cardUrl", "method", "attempt", "state", "artifactId",
		"mediaTypes", "code", "message", "pinned", "live", "digest", "fingerprint",
		"etag", "fetchedAt", "findings", "rule", "severity", "path", "before",
		"after", "skill", "scheme", "scope", "extension", "touches", "verdict", "action", "reason", "replanSkill", "trigger",
		"scopes", "extensions", "extendedCard",
		"eventId", "type", "source", "status", "latencyMs", "detail", "attemptedAt",
		"fetches", "since",
	} {
		m[k] = k
	}
	return m
}()

// key returns the object key k the scanner just read as a string of the
// tree: interned if it is a known name, copied out of the message otherwise.
func (t *tree) key(k string) string {
	if t.sc.Escaped() {
		return k // decoded into a string of its own
	}
	if v, ok := knownKeys[k]; ok {
		return v
	}
	if t.owned {
		return k
	}
	return clone(k)
}

// knownValues interns string values that recur in every event (attribute
// values, enums, common media types), for the same reason as knownKeys. It
// is built on first use, not at init, because it asks package schemas for
// the schema ids (which compiles the schemas).
// The values are held boxed (as the any the tree holds), so that a known
// value costs neither a copy nor a box.
var knownValues = sync.OnceValue(func() map[string]any {
	m := map[string]any{}
	for _, v := range append([]string{
		"1.0", "application/json", "degrade", "fail-closed", "abort", "replan", "continue",
		"breaking", "warning", "info", "client-card", "client-digest", "first-fetch",
		"text/plain", "text/event-stream", "application/octet-stream", "text", "file", "data",
		"message/send", "message/stream", "SendMessage", "SendStreamingMessage",
		"submitted", "working", "input-required", "auth-required", "completed", "failed", "canceled",
	}, Types...) {
		m[v] = v
		if id := schemaID(v); id != "" {
			m[id] = id
		}
	}
	return m
})

// maxKnownValue is the length of the longest string worth looking up in
// knownValues.
const maxKnownValue = 64

// str returns the string value s the scanner just read as a string of the
// tree (not interned: value looks known values up).
func (t *tree) str(s string) string {
	if t.sc.Escaped() || t.owned {
		return s
	}
	return clone(s)
}

// clone copies s out of the message. It is strings.Clone with the
// runtime's conversion of bytes to a string, which allocates nothing for a
// string of one byte (an attempt number, say).
func clone(s string) string {
	return string(unsafe.Slice(unsafe.StringData(s), len(s)))
}
