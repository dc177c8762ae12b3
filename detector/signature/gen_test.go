package signature

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"unicode"
)

// cardGen writes random agent cards as JSON text, driven by the schema: every
// field under its JSON name, its snake_case name (derived here, not taken from
// the schema, so a missing alias shows), or both; values of the right kind
// and of every wrong kind ts-proto coerces; members outside the schema; the
// empties cleanEmpty removes. It never writes null where the SDK throws on
// it (an element of a list of messages, the value of a map of messages other
// than StringList).
type cardGen struct {
	r     *rand.Rand
	depth int
}

func newCardGen(seed uint64) *cardGen { return &cardGen{r: rand.New(rand.NewPCG(seed, 0x5eed))} }

func (g *cardGen) chance(p float64) bool { return g.r.Float64() < p }

func (g *cardGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *cardGen) card() []byte {
	var b strings.Builder
	g.message(&b, agentCard, true)
	return []byte(b.String())
}

func snake(name string) string {
	var b strings.Builder
	for _, r := range name {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// message writes an object for m. top adds the members only a card has.
func (g *cardGen) message(b *strings.Builder, m *message, top bool) {
	var members []string
	add := func(key string, write func(*strings.Builder)) {
		var v strings.Builder
		write(&v)
		members = append(members, jsonString(key)+":"+v.String())
	}
	fields := m.fields
	if m.oneof && g.chance(0.7) { // usually one alternative, sometimes several
		f := fields[g.r.IntN(len(fields))]
		fields = []field{f}
	}
	for _, f := range fields {
		if g.chance(0.3) {
			continue
		}
		names := []string{f.name}
		if s := snake(f.name); s != f.name {
			switch g.r.IntN(4) {
			case 0:
				names = []string{s}
			case 1:
				names = append(names, s)
			}
		}
		for _, n := range names {
			add(n, func(b *strings.Builder) { g.value(b, &f) })
		}
	}
	if top {
		if g.chance(0.5) {
			add("signatures", func(b *strings.Builder) {
				b.WriteString(`[{"protected":"eyJhbGciOiJFUzI1NiJ9","signature":"c2ln"}]`)
			})
		}
		if g.chance(0.3) {
			add("url", func(b *strings.Builder) { b.WriteString(`"https://agent.example/a2a"`) })
		}
		if g.chance(0.2) {
			add("protocolVersion", func(b *strings.Builder) { b.WriteString(`"0.3.0"`) })
		}
	}
	if g.chance(0.2) {
		add(g.pick("x-extra", "unknown", "$case", "value", "type"), func(b *strings.Builder) { g.any(b) })
	}
	g.r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	b.WriteString("{" + strings.Join(members, ",") + "}")
}

// value writes a value for f: mostly of its kind, sometimes of another.
func (g *cardGen) value(b *strings.Builder, f *field) {
	if g.chance(0.1) {
		// No null inside a list or map of messages: the SDK throws on it.
		g.scalar(b, f.kind != kMessages && (f.kind != kMessageMap || f.msg == stringList))
		return
	}
	switch f.kind {
	case kString, kOptString:
		g.stringish(b)
	case kBool, kOptBool:
		b.WriteString(g.pick("true", "false", "true", "false", `"false"`, `""`, "0", "1", "-0", "[]", "{}", `"x"`))
	case kStrings:
		g.list(b, func(b *strings.Builder) { g.stringish(b) })
	case kMessage:
		g.msgValue(b, f.msg, false)
	case kMessages:
		g.list(b, func(b *strings.Builder) { g.msgValue(b, f.msg, false) })
	case kMessageMap, kStringMap:
		write := func(b *strings.Builder) { g.stringish(b) }
		if f.kind == kMessageMap {
			write = func(b *strings.Builder) { g.msgValue(b, f.msg, f.msg == stringList) }
		}
		if g.chance(0.1) {
			g.list(b, write)
			return
		}
		n := g.r.IntN(4)
		var ms []string
		seen := map[string]bool{}
		for range n {
			k := g.pick("a", "bearer", "oauth", "0", "__proto__", "é", "\U0001F600", "ﬁ", "")
			if seen[k] {
				continue
			}
			seen[k] = true
			var v strings.Builder
			write(&v)
			ms = append(ms, jsonString(k)+":"+v.String())
		}
		b.WriteString("{" + strings.Join(ms, ",") + "}")
	case kStruct:
		g.object(b)
	}
}

// msgValue writes a message, or now and then something that is not one.
func (g *cardGen) msgValue(b *strings.Builder, m *message, nullOK bool) {
	switch {
	case nullOK && g.chance(0.1):
		b.WriteString("null")
	case g.chance(0.08):
		b.WriteString(g.pick(`"x"`, "5", "true", "[]", `[{"id":"in-an-array"}]`))
	case g.depth > 6:
		b.WriteString("{}")
	default:
		g.depth++
		g.message(b, m, false)
		g.depth--
	}
}

func (g *cardGen) list(b *strings.Builder, elem func(*strings.Builder)) {
	n := g.r.IntN(4)
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		elem(b)
	}
	b.WriteByte(']')
}

var sampleStrings = []string{
	"", "", "plain", "Ledger Clerk", "text/plain", "https://agent.example/a2a",
	"café", "漢字", "\U0001F600 emoji", "ﬁ ligature", "quote \" backslash \\ slash /",
	"controls \n \t \u0001 \u001f \u007f", "line sep \u2028 para \u2029", "<html> & 'single'",
}

// stringish writes a string, or a scalar or container String() coerces.
func (g *cardGen) stringish(b *strings.Builder) {
	if g.chance(0.8) {
		b.WriteString(jsonString(sampleStrings[g.r.IntN(len(sampleStrings))]))
		return
	}
	g.scalar(b, false)
}

var sampleNumbers = []string{"0", "-0", "5", "1.50", "1E-7", "1e21", "1e-7", "123456789012345678901234567890", "0.1", "-2.5e+3", "9007199254740993", "4.35", "0.000001", "1e+300"}

// scalar writes an odd value: a number, a boolean, null, a small array or
// object; with nullOK unset, neither null nor an array with a null element.
func (g *cardGen) scalar(b *strings.Builder, nullOK bool) {
	switch g.r.IntN(7) {
	case 0, 1:
		b.WriteString(sampleNumbers[g.r.IntN(len(sampleNumbers))])
	case 2:
		b.WriteString(g.pick("true", "false"))
	case 3:
		if nullOK {
			b.WriteString("null")
		} else {
			b.WriteString(`"n"`)
		}
	case 4:
		if nullOK {
			b.WriteString(g.pick(`[]`, `[null]`, `["a",null,1,[2,[null,"b"]]]`, `[{}]`, `[true,false]`))
		} else {
			b.WriteString(g.pick(`[]`, `["a",1,[2,[null,"b"]]]`, `[{}]`, `[true,false]`))
		}
	default:
		b.WriteString(g.pick(`{}`, `{"k":"v"}`, `{"__proto__":1}`))
	}
}

// any writes arbitrary JSON (Struct contents, unknown members).
func (g *cardGen) any(b *strings.Builder) {
	if g.depth > 5 {
		g.scalar(b, true)
		return
	}
	switch g.r.IntN(5) {
	case 0:
		g.object(b)
	case 1:
		g.depth++
		g.list(b, func(b *strings.Builder) { g.any(b) })
		g.depth--
	case 2:
		b.WriteString(jsonString(sampleStrings[g.r.IntN(len(sampleStrings))]))
	default:
		g.scalar(b, true)
	}
}

func (g *cardGen) object(b *strings.Builder) {
	g.depth++
	defer func() { g.depth-- }()
	n := g.r.IntN(5)
	var ms []string
	seen := map[string]bool{}
	for range n {
		k := g.pick("a", "b", "__proto__", "0", "10", "2", "é", "\U0001F600", "ﬁ", "", "constructor", "toString")
		if seen[k] {
			continue
		}
		seen[k] = true
		var v strings.Builder
		g.any(&v)
		ms = append(ms, jsonString(k)+":"+v.String())
	}
	b.WriteString("{" + strings.Join(ms, ",") + "}")
}

// jsonString writes s as a JSON string, escaping the way a careless
// serialiser might (so \u escapes get parsed too).
func jsonString(s string) string {
	b, _ := json.Marshal(s) // escapes <, >, & and U+2028/9 as \uXXXX
	if strings.ContainsRune(s, 'é') {
		return strings.ReplaceAll(string(b), "é", `\u00e9`)
	}
	return string(b)
}
