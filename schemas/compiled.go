package schemas

import (
	"encoding/json"
	"math/big"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// The schemas are also compiled by hand into the checks below: the same
// keywords, applied as the JSON Schema validator applies them, without its
// run-time interpretation (scopes, error trees, big.Rat arithmetic, and
// regular expressions where a loop says the same). They decide
// acceptance on the hot path; a value they reject is handed to the JSON
// Schema validator, which stays the one source of every error text (and
// of the decision: a value it accepts is accepted). The checks are
// derived from the schema files as they are pinned by
// TestCompiledSchemasPinned, and proven equal to the JSON Schema validator
// by TestCompiledDifferential and FuzzCompiled (both decision and field).

// nodeKind is the JSON type a node demands (kAny: none, the schema {}).
type nodeKind uint8

const (
	kAny nodeKind = iota
	kString
	kInteger
	kBoolean
	kObject
	kArray
)

// node is one compiled subschema.
type node struct {
	kind nodeKind

	// strings (kString) and arrays (kArray): minLength/maxLength or
	// minItems/maxItems; -1 for none.
	min, max int
	// strings: the pattern and the uri format; enum (also for a string
	// "enum" without "type", since every enum here is of strings).
	pattern  func(string) bool
	uri      bool
	dateTime bool
	enum     []string
	// numbers: an enum of integers (without type).
	nums []int64

	// integers: minimum (hasLo) and maximum (hasHi), both inclusive.
	lo, hi       int64
	hasLo, hasHi bool

	// objects: required names, properties, and either additionalProperties
	// false (closed) or a schema for every other member (extra, nil for
	// none); maxProperties (-1 for none); exclusive pairs from
	// dependentSchemas of the form {"properties": {b: false}} under a.
	required  []string
	props     []prop
	closed    bool
	extra     *node
	maxProps  int
	exclusive [][2]string
	// orRequire: "if": {"properties": {name: {"const": value}}}, "else":
	// {"required": [missing]}, when set.
	orRequire *ifElse

	// arrays: items.
	items *node
}

type ifElse struct{ name, value, missing string }

type prop struct {
	name string
	node *node
}

// Shared definitions ($defs that the inbound schemas repeat, identical in
// every file: TestSharedDefs).
var (
	// $defs/taskId: string, minLength 1, maxLength 256.
	taskID = &node{kind: kString, min: 1, max: 256}
	// $defs/httpUrl: string, format uri, maxLength 2048, pattern
	// ^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\s]+
	httpURL = &node{kind: kString, min: -1, max: 2048, uri: true, pattern: httpURLPattern}
	// $defs/digest: string, pattern ^sha256:[0-9a-f]{64}$
	digest = &node{kind: kString, min: -1, max: -1, pattern: digestPattern}
	// $defs/modes: array, maxItems 64, items string 1..256.
	modes = &node{kind: kArray, min: -1, max: 64, items: str(1, 256)}
	// boolean.
	boolean = &node{kind: kBoolean}
)

func str(minLen, maxLen int) *node { return &node{kind: kString, min: minLen, max: maxLen} }

// compiled maps a schema $id to its compiled root.
var compiled = map[string]*node{
	// a2a.task.submitted.v1.json
	ID("a2a.task.submitted", 1): {
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"taskId", "agentUrl", "skillId"},
		props: []prop{
			{"taskId", taskID},
			{"agentUrl", httpURL},
			{"skillId", str(1, 256)},
			{"requires", &node{
				kind: kObject, closed: true, maxProps: -1,
				props: []prop{
					{"streaming", boolean},
					{"pushNotifications", boolean},
					{"inputModes", modes},
					{"outputModes", modes},
					{"security", &node{kind: kArray, min: -1, max: 64, items: str(1, 256)}},
					{"scopes", &node{
						kind: kObject, maxProps: 64,
						extra: &node{kind: kArray, min: -1, max: 256, items: str(1, 512)},
					}},
					{"extensions", &node{kind: kArray, min: -1, max: 64, items: str(1, 2048)}},
					{"extendedCard", boolean},
				},
			}},
			{"posture", &node{enum: []string{"fail-closed", "degrade"}}},
			{"idempotent", boolean},
			{"card", &node{kind: kObject, maxProps: -1}},
			{"cardDigest", digest},
			{"cardUrl", httpURL},
		},
		// dependentSchemas: card → {"properties": {"cardDigest": false}}
		exclusive: [][2]string{{"card", "cardDigest"}},
	},
	// a2a.task.request.v1.json
	ID("a2a.task.request", 1): {
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"taskId", "agentUrl", "method", "attempt"},
		props: []prop{
			{"taskId", taskID},
			{"agentUrl", httpURL},
			{"method", str(1, 128)},
			{"attempt", &node{kind: kInteger, lo: 1, hasLo: true}},
		},
	},
	// a2a.task.status.v1.json
	ID("a2a.task.status", 1): {
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"taskId", "agentUrl", "state"},
		props: []prop{
			{"taskId", taskID},
			{"agentUrl", httpURL},
			// $defs/state: pattern ^[A-Za-z][A-Za-z0-9_-]{0,63}$
			{"state", &node{kind: kString, min: -1, max: -1, pattern: statePattern}},
			{"skillId", str(1, 256)},
		},
	},
	// a2a.task.artifact.v1.json
	ID("a2a.task.artifact", 1): {
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"taskId", "agentUrl", "artifactId", "mediaTypes"},
		props: []prop{
			{"taskId", taskID},
			{"agentUrl", httpURL},
			{"artifactId", str(1, 256)},
			{"mediaTypes", &node{kind: kArray, min: 1, max: 64, items: str(1, 256)}},
		},
	},
	// a2a.task.error.v1.json
	ID("a2a.task.error", 1): {
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"taskId", "agentUrl", "method", "code", "message"},
		props: []prop{
			{"taskId", taskID},
			{"agentUrl", httpURL},
			{"method", str(1, 128)},
			{"code", &node{kind: kInteger, lo: -2147483648, hi: 2147483647, hasLo: true, hasHi: true}},
			{"message", str(-1, 4096)},
		},
	},
}

// depth is the longest path below n (0 for a scalar).
func (n *node) depth() int {
	d := 0
	for _, p := range n.props {
		d = max(d, 1+p.node.depth())
	}
	for _, c := range []*node{n.extra, n.items} {
		if c != nil {
			d = max(d, 1+c.depth())
		}
	}
	return d
}

// The outbound schemas' shared definitions.
var (
	// $defs/trigger.
	trigger = &node{
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"eventId", "type"},
		props: []prop{
			{"eventId", str(1, -1)},
			{"type", str(1, -1)},
			{"source", str(1, -1)},
		},
	}
	// $defs/signer.
	signer = &node{
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"kid", "alg", "verified", "reason"},
		props: []prop{
			{"kid", str(-1, -1)},
			{"alg", str(-1, -1)},
			{"jku", str(-1, -1)},
			{"thumbprint", &node{kind: kString, min: -1, max: -1, pattern: regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`).MatchString}},
			{"source", &node{enum: []string{"trusted", "jku"}}},
			{"verified", boolean},
			{"reason", ruleID},
		},
	}
	// $defs/ruleId (and signer reason, unreachable reason): pattern
	// ^[a-z][a-z0-9]*(-[a-z0-9]+)*$, maxLength 64.
	ruleID = &node{kind: kString, min: -1, max: 64, pattern: regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`).MatchString}
	// $defs/cardRef (card.drift).
	cardRef = &node{
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"digest"},
		props: []prop{
			{"digest", digest},
			{"fingerprint", digest},
			{"etag", str(-1, -1)},
			{"fetchedAt", dateTime},
			{"signer", signer},
		},
	}
	// string, format date-time.
	dateTime = &node{kind: kString, min: -1, max: -1, dateTime: true}
	// $defs/finding (card.drift).
	finding = &node{
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"rule", "severity", "path", "message"},
		props: []prop{
			{"rule", ruleID},
			{"severity", &node{enum: []string{"breaking", "warning", "info"}}},
			{"path", &node{kind: kString, min: -1, max: -1, pattern: regexp.MustCompile(`^(/([^~/]|~[01])*)*$`).MatchString}},
			{"before", &node{kind: kAny}},
			{"after", &node{kind: kAny}},
			{"message", str(-1, -1)},
			{"skill", str(-1, -1)},
			{"scheme", str(-1, -1)},
			{"scope", str(-1, -1)},
			{"extension", str(-1, -1)},
			{"touches", boolean},
		},
	}
)

func init() {
	// card.drift.v1.json
	compiled[ID("card.drift", 1)] = &node{
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"taskId", "agentUrl", "cardUrl", "pinned", "live", "findings", "verdict", "trigger"},
		props: []prop{
			{"taskId", taskID},
			{"agentUrl", httpURL},
			{"cardUrl", httpURL},
			{"pinned", cardRef},
			{"live", cardRef},
			{"findings", &node{kind: kArray, min: -1, max: -1, items: finding}},
			{"verdict", &node{
				kind: kObject, closed: true, maxProps: -1,
				required: []string{"action", "posture", "reason"},
				props: []prop{
					{"action", &node{enum: []string{"abort", "replan", "continue"}}},
					{"posture", &node{enum: []string{"fail-closed", "degrade"}}},
					{"reason", str(-1, -1)},
					{"replanSkill", str(1, -1)},
				},
			}},
			{"trigger", trigger},
		},
	}
	// card.inconsistent.v1.json
	compiled[ID("card.inconsistent", 1)] = &node{
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"agentUrl", "cardUrl", "digests", "window"},
		props: []prop{
			{"agentUrl", httpURL},
			{"cardUrl", httpURL},
			{"digests", &node{kind: kArray, min: 2, max: -1, items: &node{
				kind: kObject, closed: true, maxProps: -1,
				required: []string{"digest", "count", "firstSeen", "lastSeen"},
				props: []prop{
					{"digest", digest},
					{"count", &node{kind: kInteger, lo: 1, hasLo: true}},
					{"firstSeen", dateTime},
					{"lastSeen", dateTime},
				},
			}}},
			{"window", &node{kind: kString, min: -1, max: -1, pattern: regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`).MatchString}},
		},
	}
	// card.observed.v1.json
	compiled[ID("card.observed", 1)] = &node{
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"agentUrl", "cardUrl", "digest", "status", "fetchedAt", "latencyMs"},
		props: []prop{
			{"agentUrl", httpURL},
			{"cardUrl", httpURL},
			{"digest", digest},
			{"status", &node{nums: []int64{200, 304}}},
			{"etag", str(-1, -1)},
			{"fetchedAt", dateTime},
			{"latencyMs", &node{kind: kInteger, lo: 0, hasLo: true}},
			{"fetches", &node{kind: kInteger, lo: 1, hasLo: true}},
			{"since", dateTime},
		},
	}
	// card.pinned.v1.json
	compiled[ID("card.pinned", 1)] = &node{
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"taskId", "agentUrl", "digest", "source"},
		props: []prop{
			{"taskId", taskID},
			{"agentUrl", httpURL},
			{"cardUrl", httpURL},
			{"digest", digest},
			{"fingerprint", digest},
			{"source", &node{enum: []string{"client-card", "client-digest", "first-fetch"}}},
			{"trigger", trigger},
			{"signer", signer},
			{"extended", &node{enum: []string{"pinned", "unavailable"}}},
		},
		// "if": {"properties": {"source": {"const": "client-digest"}}},
		// "else": {"required": ["fingerprint"]}
		orRequire: &ifElse{name: "source", value: "client-digest", missing: "fingerprint"},
	}
	// card.unreachable.v1.json
	compiled[ID("card.unreachable", 1)] = &node{
		kind: kObject, closed: true, maxProps: -1,
		required: []string{"agentUrl", "cardUrl", "reason"},
		props: []prop{
			{"agentUrl", httpURL},
			{"cardUrl", httpURL},
			{"reason", ruleID},
			{"detail", str(-1, 4096)},
			{"taskId", taskID},
			{"attemptedAt", dateTime},
			{"trigger", trigger},
		},
	}
	for id, n := range compiled {
		if d := n.depth(); d > maxPath {
			panic("schemas: compiled " + id + " is " + strconv.Itoa(d) + " levels deep, more than maxPath")
		}
	}
}

// isDateTime is the date-time format as the JSON Schema validator asserts
// it (its validateDateTime, RFC 3339 §5.6 with a leap second allowed only
// at 23:59 UTC).
func isDateTime(s string) bool {
	if len(s) < 20 || s[10] != 't' && s[10] != 'T' {
		return false
	}
	if _, err := time.Parse("2006-01-02", s[:10]); err != nil {
		return false
	}
	return isTime(s[11:])
}

// isTime is the validator's validateTime.
func isTime(str string) bool {
	if len(str) < 9 || str[2] != ':' || str[5] != ':' {
		return false
	}
	var hms [3]int
	for i, tok := range strings.SplitN(str[:8], ":", 3) {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 {
			return false
		}
		hms[i] = n
	}
	h, m, sec := hms[0], hms[1], hms[2]
	if h > 23 || m > 59 || sec > 60 {
		return false
	}
	str = str[8:]
	if rem, ok := strings.CutPrefix(str, "."); ok {
		digits := 0
		for _, ch := range rem {
			if ch < '0' || ch > '9' {
				break
			}
			digits++
		}
		if digits == 0 {
			return false
		}
		str = rem[digits:]
	}
	if str != "z" && str != "Z" {
		if len(str) != 6 {
			return false
		}
		var sign int
		switch str[0] {
		case '+':
			sign = -1
		case '-':
			sign = +1
		default:
			return false
		}
		str = str[1:]
		if str[2] != ':' {
			return false
		}
		var zhm [2]int
		for i, tok := range strings.SplitN(str, ":", 2) {
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 {
				return false
			}
			zhm[i] = n
		}
		if zhm[0] > 23 || zhm[1] > 59 {
			return false
		}
		hm := (h*60 + m) + sign*(zhm[0]*60+zhm[1])
		if hm < 0 {
			hm += 24 * 60
		}
		h, m = hm/60, hm%60
	}
	return sec < 60 || h == 23 && m == 59
}

// httpURLPattern is ^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\s]+ (unanchored at the
// end: one character after "://" that is none of / ? # and RE2's \s,
// [\t\n\f\r ], suffices; an invalid UTF-8 byte reads as U+FFFD, which
// matches).
func httpURLPattern(s string) bool {
	if len(s) < 4 || s[0]|0x20 != 'h' || s[1]|0x20 != 't' || s[2]|0x20 != 't' || s[3]|0x20 != 'p' {
		return false
	}
	s = s[4:]
	if s != "" && s[0]|0x20 == 's' {
		s = s[1:]
	}
	if len(s) < 4 || s[:3] != "://" {
		return false
	}
	switch s[3] {
	case '/', '?', '#', '\t', '\n', '\f', '\r', ' ':
		return false
	}
	return true
}

// statePattern is ^[A-Za-z][A-Za-z0-9_-]{0,63}$.
func statePattern(s string) bool {
	if len(s) < 1 || len(s) > 64 || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !('0' <= c && c <= '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// digestPattern is ^sha256:[0-9a-f]{64}$.
func digestPattern(s string) bool {
	if len(s) != len("sha256:")+64 || s[:7] != "sha256:" {
		return false
	}
	for i := 7; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isURI is the uri format as the JSON Schema validator asserts it:
// url.Parse accepts it, the URL is absolute, and a host name with a colon
// is a bracketed IPv6 address without a zone. Strings that pass are
// remembered (up to maxURIs): a fleet has few agent URLs.
func isURI(s string) bool {
	if plainHTTPURL(s) {
		return true
	}
	if _, ok := validURIs.Load(s); ok {
		return true
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() {
		return false
	}
	if h := u.Hostname(); strings.Contains(h, ":") {
		if !strings.Contains(u.Host, "[") || !strings.Contains(u.Host, "]") {
			return false
		}
		addr, err := netip.ParseAddr(h)
		if err != nil || addr.Zone() != "" {
			return false
		}
	}
	if validURICount.Add(1) <= maxURIs {
		validURIs.Store(s, struct{}{})
	}
	return true
}

var (
	validURIs     sync.Map
	validURICount atomic.Int64
)

const maxURIs = 4096

// walker applies compiled nodes to a value tree and records the first
// violating field by JSON pointer (the field the JSON Schema validator's
// error names: the smallest pointer among its leaves). The path is kept as
// tokens and rendered only when a violation is found, so that a value that
// conforms costs no allocation.
type walker struct {
	path  [maxPath]token
	depth int
	bad   bool
	field string
}

// maxPath bounds the depth of a compiled schema (init checks it): the
// walker descends only along nodes, so its path fits in an array, which
// keeps the walker off the heap.
const maxPath = 8

type token struct {
	key string
	idx int // -1 for a key
}

func (w *walker) push(t token) { w.path[w.depth] = t; w.depth++ }
func (w *walker) pop()         { w.depth-- }

// fail records a violation at the current location, or at its member key
// when member is set.
func (w *walker) fail(key string, member bool) {
	var b strings.Builder
	for _, t := range w.path[:w.depth] {
		b.WriteByte('/')
		if t.idx >= 0 {
			b.WriteString(strconv.Itoa(t.idx))
		} else {
			b.WriteString(escapeToken(t.key))
		}
	}
	if member {
		b.WriteByte('/')
		b.WriteString(escapeToken(key))
	}
	if f := b.String(); !w.bad || f < w.field {
		w.field = f
	}
	w.bad = true
}

// check applies n to v.
func (w *walker) check(n *node, v any) {
	if n.enum != nil {
		s, ok := v.(string)
		if !ok || !contains(n.enum, s) {
			w.fail("", false)
		}
		return
	}
	if n.nums != nil {
		if !numIn(v, n.nums) {
			w.fail("", false)
		}
		return
	}
	switch n.kind {
	case kString:
		s, ok := v.(string)
		if !ok || !n.str(s) {
			w.fail("", false)
		}
	case kBoolean:
		if _, ok := v.(bool); !ok {
			w.fail("", false)
		}
	case kInteger:
		if !n.integer(v) {
			w.fail("", false)
		}
	case kArray:
		a, ok := v.([]any)
		if !ok {
			w.fail("", false)
			return
		}
		if n.min >= 0 && len(a) < n.min || n.max >= 0 && len(a) > n.max {
			w.fail("", false)
		}
		for i, x := range a {
			w.push(token{idx: i})
			w.check(n.items, x)
			w.pop()
		}
	case kObject:
		m, ok := v.(map[string]any)
		if !ok {
			w.fail("", false)
			return
		}
		w.object(n, m)
	}
}

func (w *walker) object(n *node, m map[string]any) {
	if n.maxProps >= 0 && len(m) > n.maxProps {
		w.fail("", false)
	}
	for _, r := range n.required {
		if _, ok := m[r]; !ok {
			w.fail(r, true)
		}
	}
	if len(n.props) == 0 && n.extra == nil && !n.closed {
		return
	}
	known := 0
	for _, p := range n.props {
		x, ok := m[p.name]
		if !ok {
			continue
		}
		known++
		w.push(token{key: p.name, idx: -1})
		w.check(p.node, x)
		w.pop()
	}
	if known < len(m) && (n.closed || n.extra != nil) {
		for k, x := range m {
			if n.has(k) {
				continue
			}
			if n.closed {
				w.fail(k, true)
				continue
			}
			w.push(token{key: k, idx: -1})
			w.check(n.extra, x)
			w.pop()
		}
	}
	if c := n.orRequire; c != nil {
		if x, ok := m[c.name]; ok && x != c.value {
			if _, ok := m[c.missing]; !ok {
				w.fail(c.missing, true)
			}
		}
	}
	for _, e := range n.exclusive {
		if _, ok := m[e[0]]; ok {
			if _, ok := m[e[1]]; ok {
				w.fail(e[1], true)
			}
		}
	}
}

func (n *node) has(k string) bool {
	for _, p := range n.props {
		if p.name == k {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// str applies a string node's keywords. Lengths count code points, as
// JSON Schema does (an invalid UTF-8 byte counts as one).
func (n *node) str(s string) bool {
	if n.min >= 0 || n.max >= 0 {
		l := len(s) // bytes ≥ code points
		if n.min >= 0 && l < n.min || n.max >= 0 && l > n.max {
			l = utf8.RuneCountInString(s)
		}
		if n.min >= 0 && l < n.min || n.max >= 0 && l > n.max {
			return false
		}
	}
	if n.pattern != nil && !n.pattern(s) {
		return false
	}
	if n.dateTime && !isDateTime(s) {
		return false
	}
	return !n.uri || isURI(s)
}

// numIn reports whether v is a JSON number equal to one of nums (200.0
// and 2e2 equal 200, as JSON Schema compares numbers).
func numIn(v any, nums []int64) bool {
	num, ok := v.(json.Number)
	if !ok {
		return false
	}
	i, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		r, ok := new(big.Rat).SetString(string(num))
		if !ok || !r.IsInt() || !r.Num().IsInt64() {
			return false
		}
		i = r.Num().Int64()
	}
	for _, x := range nums {
		if x == i {
			return true
		}
	}
	return false
}

// integer applies an integer node: a JSON number with an integral value
// (1.0 and 1e3 are integers) within its bounds. Anything but json.Number
// (encoding/json's float64, Go integers) is left to the JSON Schema
// validator.
func (n *node) integer(v any) bool {
	num, ok := v.(json.Number)
	if !ok {
		return false
	}
	if i, err := strconv.ParseInt(string(num), 10, 64); err == nil {
		return (!n.hasLo || n.lo <= i) && (!n.hasHi || i <= n.hi)
	}
	r, ok := new(big.Rat).SetString(string(num))
	if !ok || !r.IsInt() {
		return false
	}
	return (!n.hasLo || r.Cmp(new(big.Rat).SetInt64(n.lo)) >= 0) && (!n.hasHi || r.Cmp(new(big.Rat).SetInt64(n.hi)) <= 0)
}

// checkCompiled applies the compiled root of a schema to v. It returns
// whether v conforms and, when it does not, the first violating field.
func checkCompiled(root *node, v any) (field string, ok bool) {
	var w walker
	w.check(root, v)
	return w.field, !w.bad
}
