package signature

import (
	"bytes"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/detector/jcs"
	"github.com/carddrift/carddrift/detector/jcs/jcstest"
)

// The vectors are the repository's copies under ../jcs/testdata (see the
// README there for their provenance and licence).
const vectorsDir = "../jcs/testdata"

// TestTCKVectors runs the A2A TCK's a2a-jcs-v01 corpus (RFC 8785 and the
// signatures exclusion, layer A of card signing) through FormServed, which is
// exactly that layer. The A2 vectors are card-shaped: every form must agree
// on them. Must-reject vectors that are not JSON are refused with ErrNotCard;
// A2-REJECT-003/004 (canonical JSON that still carries "signatures") must
// never come out of any form.
func TestTCKVectors(t *testing.T) {
	for _, v := range jcstest.TCK(t, vectorsDir) {
		t.Run(v.ID, func(t *testing.T) {
			switch v.Disposition {
			case "MUST-ACCEPT":
				want, err := hex.DecodeString(v.Expected.CanonicalUTF8Hex)
				if err != nil {
					t.Fatal(err)
				}
				forms := []Form{FormServed}
				if strings.HasPrefix(v.ID, "A2-") {
					forms = Forms()
				}
				for _, f := range forms {
					got, err := Canonical(v.Input, f)
					if err != nil || !bytes.Equal(got, want) {
						t.Errorf("Canonical(%s, %s) = %s, %v; want %s", v.Input, f, got, err, want)
					}
				}
			case "MUST-REJECT":
				in := []byte(*v.InputRaw)
				if strings.HasPrefix(v.ID, "A2-") {
					for _, f := range Forms() {
						got, err := Canonical(in, f)
						if err != nil || bytes.Contains(got, []byte(`"signatures"`)) {
							t.Errorf("Canonical(%s, %s) = %s, %v; want it without signatures", in, f, got, err)
						}
					}
					return
				}
				for _, f := range Forms() {
					if got, err := Canonical(in, f); !errors.Is(err, ErrNotCard) {
						t.Errorf("Canonical(%s, %s) = %s, %v; want ErrNotCard", in, f, got, err)
					}
				}
			default:
				t.Fatalf("disposition %q", v.Disposition)
			}
		})
	}
}

// TestCardSigningVectors runs the TCK's card-signing payloads and the A2A
// specification's §8.4.1 example, each under the forms that produce it, and
// pins down how the SDK's form differs where it does not (the differences
// are the SDK's, checked against it in TestSDKCanonical).
func TestCardSigningVectors(t *testing.T) {
	type vector struct {
		id, card, expected string
		// what each form gives: "" means the expected payload.
		sdk, spec string
	}
	sdkMinimal := `{"capabilities":{"pushNotifications":false,"streaming":false},"name":"Example Agent"}`
	want := map[string]vector{
		// The SDK drops the empty REQUIRED description and skills.
		"cardsign-canon-001": {sdk: sdkMinimal},
		"cardsign-canon-002": {sdk: sdkMinimal},
		// url is not a v1.0 AgentCard field and {"type":"oauth2"} is the
		// v0.3 scheme shape: only the served form keeps them.
		"cardsign-canon-003": {
			sdk:  `{"capabilities":{"streaming":true},"name":"Pay Agent","skills":[{"id":"quote","name":"Quote"}],"version":"1.0.0"}`,
			spec: `{"capabilities":{"streaming":true},"name":"Pay Agent","securitySchemes":{"oauth":{}},"skills":[{"id":"quote","name":"Quote"}],"version":"1.0.0"}`,
		},
	}
	var vectors []vector
	for _, c := range jcstest.SigningCases(t, vectorsDir) {
		w, ok := want[c.ID]
		if !ok {
			t.Fatalf("vector %s is not in the table", c.ID)
		}
		w.id, w.card, w.expected = c.ID, string(c.Card), c.Expected
		vectors = append(vectors, w)
	}
	if len(vectors) != 3 {
		t.Fatalf("found %d card-signing vectors, want 3", len(vectors))
	}
	spec := filepath.Join(vectorsDir, "a2a-spec/spec-v1.0.1-sec8.4.1-default-value-removal")
	vectors = append(vectors, vector{
		id:       "spec-v1.0.1-sec8.4.1",
		card:     string(jcstest.ReadFile(t, spec+".input.json")),
		expected: string(jcstest.ReadFile(t, spec+".expected.json")),
		// The served form keeps "extensions": [], which the example drops.
		sdk: sdkMinimal,
	})
	for _, v := range vectors {
		t.Run(v.id, func(t *testing.T) {
			for _, f := range Forms() {
				want := v.expected
				switch {
				case f == FormSDK && v.sdk != "":
					want = v.sdk
				case f == FormSpec && v.spec != "":
					want = v.spec
				case f == FormServed && strings.HasPrefix(v.id, "spec-"):
					want = `{"capabilities":{"extensions":[],"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}`
				}
				got, err := Canonical([]byte(v.card), f)
				if err != nil || string(got) != want {
					t.Errorf("Canonical(%s) = %s, %v\nwant %s", f, got, err, want)
				}
			}
		})
	}
}

// TestSDKForm pins down the SDK form on the corners of ts-proto's reading and
// the SDK's cleanEmpty (each output was checked against canonicalizeAgentCard
// of @a2a-js/sdk 1.3.0; TestSDKCanonical checks many more).
func TestSDKForm(t *testing.T) {
	tests := []formCase{
		{"empty card", `{}`, `{}`},
		{"only unknown members", `{"url":"https://a.example","protocolVersion":"0.3.0"}`, `{}`},
		{"signatures dropped", `{"name":"a","signatures":[{"protected":"x","signature":"y"}]}`, `{"name":"a"}`},
		{"optional bools kept false, plain bools not",
			`{"capabilities":{"streaming":false,"pushNotifications":false,"extendedAgentCard":false,"extensions":[{"uri":"u","required":false}]}}`,
			`{"capabilities":{"extendedAgentCard":false,"extensions":[{"uri":"u"}],"pushNotifications":false,"streaming":false}}`},
		{"snake_case accepted, camelCase wins",
			`{"default_input_modes":["a"],"defaultOutputModes":["b"],"default_output_modes":["c"],"icon_url":"i"}`,
			`{"defaultInputModes":["a"],"defaultOutputModes":["b"],"iconUrl":"i"}`},
		{"a camelCase member of the wrong shape falls back to snake_case",
			`{"defaultInputModes":"text/plain","default_input_modes":["a"]}`,
			`{"defaultInputModes":["a"]}`},
		{"a null camelCase member falls back to snake_case",
			`{"documentationUrl":null,"documentation_url":"d"}`, `{"documentationUrl":"d"}`},
		{"JavaScript String()",
			`{"name":5,"version":true,"description":[1,[2,null],{},"x"],"iconUrl":1e21,"documentationUrl":-0}`,
			`{"description":"1,2,,[object Object],x","documentationUrl":"0","iconUrl":"1e+21","name":"5","version":"true"}`},
		{"JavaScript Boolean()",
			`{"capabilities":{"streaming":"false","pushNotifications":0,"extendedAgentCard":[]}}`,
			`{"capabilities":{"extendedAgentCard":true,"pushNotifications":false,"streaming":true}}`},
		{"list elements coerced, empty ones dropped",
			`{"skills":[{"id":"s","tags":[null,"",7,"t"]}]}`, `{"skills":[{"id":"s","tags":["null","7","t"]}]}`},
		{"empty messages dropped from lists",
			`{"skills":[{},"x",5,[],{"id":"s"}],"supportedInterfaces":[{"tenant":""}]}`, `{"skills":[{"id":"s"}]}`},
		{"first set oneof member wins, snake_case in its turn",
			`{"securitySchemes":{"a":{"mtlsSecurityScheme":{"description":"m"},"http_auth_security_scheme":{"scheme":"Bearer"}}}}`,
			`{"securitySchemes":{"a":{"httpAuthSecurityScheme":{"scheme":"Bearer"}}}}`},
		{"v0.3 and ts-proto scheme shapes are not v1.0: dropped",
			`{"securitySchemes":{"a":{"type":"http","scheme":"bearer"},"b":{"scheme":{"$case":"httpAuthSecurityScheme","value":{"scheme":"Bearer"}}}}}`,
			`{}`},
		{"a requirement without scopes is dropped",
			`{"securityRequirements":[{"schemes":{"bearer":{"list":[]}}},{"schemes":{"oauth":{"list":["r"]}}}]}`,
			`{"securityRequirements":[{"schemes":{"oauth":{"list":["r"]}}}]}`},
		{"a map given as an array is read by index",
			`{"securitySchemes":[{"mtlsSecurityScheme":{"description":"m"}}]}`,
			`{"securitySchemes":{"0":{"mtlsSecurityScheme":{"description":"m"}}}}`},
		{"scopes coerced, empty ones dropped, __proto__ lost",
			`{"securitySchemes":{"o":{"oauth2SecurityScheme":{"flows":{"clientCredentials":{"tokenUrl":"t","scopes":{"a":"A","b":"","c":null,"d":2,"__proto__":"p"}}}}}}}`,
			`{"securitySchemes":{"o":{"oauth2SecurityScheme":{"flows":{"clientCredentials":{"scopes":{"a":"A","c":"null","d":"2"},"tokenUrl":"t"}}}}}}`},
		{"Struct contents cleaned, numbers in ECMAScript form",
			`{"capabilities":{"extensions":[{"uri":"u","params":{"a":"","b":null,"c":[],"d":{},"e":[null,"",{"x":""}],"f":0,"g":false,"h":1.50E+2,"__proto__":{"x":1},"i":[1,"",2]}}]}}`,
			`{"capabilities":{"extensions":[{"params":{"f":0,"g":false,"h":150,"i":[1,2]},"uri":"u"}]}}`},
		{"Struct given as an array is carried",
			`{"capabilities":{"extensions":[{"uri":"u","params":["a",""]}]}}`,
			`{"capabilities":{"extensions":[{"params":["a"],"uri":"u"}]}}`},
		{"only Struct empties: the extension survives by its uri alone",
			`{"capabilities":{"extensions":[{"uri":"u","params":{"a":""}}]}}`,
			`{"capabilities":{"extensions":[{"uri":"u"}]}}`},
		{"escapes and non-ASCII as JCS writes them",
			`{"name":"caf\u00e9 \ud83d\ude00 \u2028 \"q\" \u0001 \/"}`,
			"{\"name\":\"café 😀 \u2028 \\\"q\\\" \\u0001 /\"}"},
	}
	runForm(t, FormSDK, tests)
}

// TestSpecForm pins down the §8.4.1 presence rules.
func TestSpecForm(t *testing.T) {
	tests := []formCase{
		{"REQUIRED kept at their defaults when set",
			`{"name":"","description":"","version":"","supportedInterfaces":[],"skills":[{"id":"","name":"","description":"","tags":[]}],"defaultInputModes":[],"defaultOutputModes":[]}`,
			`{"defaultInputModes":[],"defaultOutputModes":[],"description":"","name":"","skills":[{"description":"","id":"","name":"","tags":[]}],"supportedInterfaces":[],"version":""}`},
		{"REQUIRED not invented when absent", `{"name":"a"}`, `{"name":"a"}`},
		{"optional fields kept when set to defaults",
			`{"documentationUrl":"","iconUrl":"","capabilities":{"streaming":false}}`,
			`{"capabilities":{"streaming":false},"documentationUrl":"","iconUrl":""}`},
		{"plain fields dropped at their defaults",
			`{"provider":{"url":"u","organization":"o"},"supportedInterfaces":[{"url":"u","protocolBinding":"JSONRPC","protocolVersion":"1.0","tenant":""}],"capabilities":{"extensions":[{"uri":"","description":"","required":false}]}}`,
			`{"capabilities":{"extensions":[{}]},"provider":{"organization":"o","url":"u"},"supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"u"}]}`},
		{"messages kept when set, even empty", `{"provider":{},"capabilities":{}}`, `{"capabilities":{},"provider":{}}`},
		{"list elements and Struct contents kept as they are",
			`{"skills":[{"id":"s","tags":["",""]}],"capabilities":{"extensions":[{"uri":"u","params":{"a":"","b":[]}}]}}`,
			`{"capabilities":{"extensions":[{"params":{"a":"","b":[]},"uri":"u"}]},"skills":[{"id":"s","tags":["",""]}]}`},
		{"REQUIRED scopes kept empty, optional ones not",
			`{"securitySchemes":{"o":{"oauth2SecurityScheme":{"flows":{"clientCredentials":{"tokenUrl":"t","scopes":{}}}}},"i":{"oauth2SecurityScheme":{"flows":{"implicit":{"scopes":{}}}}}}}`,
			`{"securitySchemes":{"i":{"oauth2SecurityScheme":{"flows":{"implicit":{}}}},"o":{"oauth2SecurityScheme":{"flows":{"clientCredentials":{"scopes":{},"tokenUrl":"t"}}}}}}`},
		{"a requirement without scopes is kept",
			`{"securityRequirements":[{"schemes":{"bearer":{"list":[]}}}]}`,
			`{"securityRequirements":[{"schemes":{"bearer":{}}}]}`},
	}
	runForm(t, FormSpec, tests)
}

// formCase is a card and its canonical form under one Form.
type formCase struct {
	name, card, want string
}

// runForm checks that Canonical writes each card in form as wanted.
func runForm(t *testing.T, form Form, tests []formCase) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonical([]byte(tc.card), form)
			if err != nil || string(got) != tc.want {
				t.Errorf("Canonical(%s, %s) =\n%s, %v\nwant\n%s", tc.card, form, got, err, tc.want)
			}
		})
	}
}

func TestCanonicalErrors(t *testing.T) {
	for _, in := range []string{``, `[]`, `"card"`, `{"a":1,"a":2}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":NaN}`} {
		for _, f := range Forms() {
			if got, err := Canonical([]byte(in), f); !errors.Is(err, ErrNotCard) {
				t.Errorf("Canonical(%q, %s) = %s, %v; want ErrNotCard", in, f, got, err)
			}
		}
	}
	if _, err := Canonical([]byte(`{}`), "jcs"); !errors.Is(err, ErrUnknownForm) {
		t.Errorf("Canonical(form jcs) error = %v, want ErrUnknownForm", err)
	}
}

// TestCanonicalProperties checks, on every fixture card and generated card,
// that each form is RFC 8785 canonical, has no top-level signatures, is a
// fixed point (normalising the normalised card changes nothing), and leaves
// the parsed card untouched.
func TestCanonicalProperties(t *testing.T) {
	cards := fixtureCards(t)
	g := newCardGen(7)
	for range 300 {
		cards = append(cards, g.card())
	}
	for i, raw := range cards {
		v, err := jcs.ParseObject(raw, jcs.Limits{})
		if err != nil {
			t.Fatalf("card %d: %v", i, err)
		}
		before := jcs.Append(nil, &v)
		for _, f := range Forms() {
			checkCanonical(t, raw, f)
			AppendCanonical(nil, &v, f)
		}
		if after := jcs.Append(nil, &v); !bytes.Equal(before, after) {
			t.Fatalf("card %d: AppendCanonical modified the parsed card", i)
		}
	}
}

// checkCanonical checks the properties of TestCanonicalProperties for one card
// and form.
func checkCanonical(t testing.TB, raw []byte, f Form) {
	t.Helper()
	got, err := Canonical(raw, f)
	if err != nil {
		t.Fatalf("Canonical(%s, %s): %v", raw, f, err)
	}
	v, err := jcs.ParseObject(got, jcs.Limits{})
	if err != nil {
		t.Fatalf("Canonical(%s, %s) = %s, which does not parse: %v", raw, f, got, err)
	}
	if again := jcs.Append(nil, &v); !bytes.Equal(again, got) {
		t.Fatalf("Canonical(%s, %s) = %s, not in RFC 8785 form (%s)", raw, f, got, again)
	}
	if _, ok := v.Get(signaturesKey); ok {
		t.Fatalf("Canonical(%s, %s) = %s keeps signatures", raw, f, got)
	}
	if twice, err := Canonical(got, f); err != nil || !bytes.Equal(twice, got) {
		t.Fatalf("Canonical is not a fixed point under %s:\n%s\n%s", f, got, twice)
	}
}

// fixtureCards returns the real cards of ../testdata/cards.
func fixtureCards(t testing.TB) [][]byte {
	t.Helper()
	paths, err := filepath.Glob("../testdata/cards/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixture cards (%v)", err)
	}
	var out [][]byte
	for _, p := range paths {
		out = append(out, jcstest.ReadFile(t, p))
	}
	return out
}
