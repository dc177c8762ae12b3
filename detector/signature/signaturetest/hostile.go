package signaturetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// HostileCard is a v1.0 card whose three canonical forms differ: only the
// served form keeps "x-padding", the sdk form drops the empty "description".
const HostileCard = `{"name":"Hostile Signer","description":"Signed to be expensive.","version":"1.0.0",` +
	`"supportedInterfaces":[{"url":"https://hostile.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],` +
	`"capabilities":{"streaming":false},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],` +
	`"skills":[{"id":"s","name":"S","description":"","tags":["t"]}],"x-padding":"served form only"}`

// Hostile says how to build a hostile card; zero fields take the defaults.
type Hostile struct {
	Signatures int    // entries of "signatures" (16)
	Keys       int    // P-521 keys in the set, all under KeyID (100, a set's most)
	KeyID      string // ("k")
	JKU        string // named by every signature, if set
	Card       string // a JSON object without "signatures" (HostileCard)
}

// Build returns the card with h.Signatures ES512 signatures that verify under
// no key, and the JWKS of h.Keys fresh keys: a verifier that tries them all
// makes Signatures × Keys × 3 P-521 verifications. r and s are in [1, n-1],
// so no range check rejects a signature before the curve arithmetic.
func (h Hostile) Build() (card, jwks []byte, err error) {
	if h.Signatures == 0 {
		h.Signatures = 16
	}
	if h.Keys == 0 {
		h.Keys = 100
	}
	if h.KeyID == "" {
		h.KeyID = "k"
	}
	if h.Card == "" {
		h.Card = HostileCard
	}
	base := strings.TrimSpace(h.Card)
	if !strings.HasPrefix(base, "{") || !strings.HasSuffix(base, "}") || strings.Contains(base, `"signatures"`) {
		return nil, nil, fmt.Errorf("signaturetest: Card must be a JSON object without signatures")
	}

	hdr := map[string]string{"alg": "ES512", "kid": h.KeyID, "typ": "JOSE"}
	if h.JKU != "" {
		hdr["jku"] = h.JKU
	}
	hdrJSON, err := json.Marshal(hdr)
	if err != nil {
		return nil, nil, err
	}
	protected := base64.RawURLEncoding.EncodeToString(hdrJSON)
	n := elliptic.P521().Params().N
	type entry struct {
		Protected string `json:"protected"`
		Signature string `json:"signature"`
	}
	sigs := make([]entry, h.Signatures)
	for i := range sigs {
		raw := make([]byte, 132)
		for half := range 2 {
			v, err := rand.Int(rand.Reader, new(big.Int).Sub(n, big.NewInt(1)))
			if err != nil {
				return nil, nil, err
			}
			v.Add(v, big.NewInt(1)).FillBytes(raw[half*66 : (half+1)*66])
		}
		sigs[i] = entry{Protected: protected, Signature: base64.RawURLEncoding.EncodeToString(raw)}
	}
	sigJSON, err := json.Marshal(sigs)
	if err != nil {
		return nil, nil, err
	}
	card = []byte(strings.TrimSuffix(base, "}") + `,"signatures":` + string(sigJSON) + "}")

	keys := make([]jose.JSONWebKey, h.Keys)
	for i := range keys {
		priv, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		keys[i] = jose.JSONWebKey{Key: priv.Public(), KeyID: h.KeyID, Algorithm: "ES512", Use: "sig"}
	}
	jwks, err = json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		return nil, nil, err
	}
	return card, jwks, nil
}
