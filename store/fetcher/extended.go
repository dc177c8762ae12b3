package fetcher

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/detector/jcs"
)

// Authenticated extended cards (contract v1.2): an agent whose public card
// declares capabilities.extendedAgentCard serves a richer card to
// authenticated clients, by the method of the interface's protocol version
// and binding (A2A v0.3 §7.10, v1.0.1 §3.1.11, §5.3, §9.4.8):
//
//	v0.3 JSON-RPC   POST {url}  {"method": "agent/getAuthenticatedExtendedCard"}
//	v0.3 HTTP+JSON  GET  {url}/v1/card
//	v1.0 JSON-RPC   POST {url}  {"method": "GetExtendedAgentCard"}
//	v1.0 HTTP+JSON  GET  {url}[/{tenant}]/extendedAgentCard
//
// (the names a2a-go v2.3.1 — jsonrpc.MethodGetExtendedAgentCard,
// rest.MakeGetExtendedAgentCardPath, a2av0's methodGetExtendedAgentCard —
// and @a2a-js/sdk 1.3.0 answer). ObserveExtended fetches it with the
// credential held for the interface's origin, through the lease protocol of
// Observe under a key of its own (ExtendedEndpoint.Key), so it is coalesced,
// leased, stored by digest and recorded like any card.

// Extended-card methods and paths.
const (
	MethodExtendedV03 = "agent/getAuthenticatedExtendedCard"
	MethodExtendedV10 = "GetExtendedAgentCard"
	PathExtendedV03   = "/v1/card"
	PathExtendedV10   = "/extendedAgentCard"
)

// extendedFragment marks a lease key as an extended card's. Public card
// keys are CanonicalURL forms, which never carry a fragment, so the two can
// never share a lease, however a client spells a cardUrl.
const extendedFragment = "extended"

// ErrExtendedUnavailable is matched by the errors of ObserveExtended when
// no extended card can be asked for: no credential for the agent's origin,
// a public card that offers none, or no interface to ask it at. It says
// nothing about the agent's reachability: the task's pin says
// extended: "unavailable" and the task is judged on the public card.
var ErrExtendedUnavailable = errors.New("fetcher: no extended card can be asked for")

// ExtendedUnavailableError says why (Why: "no-credentials", "not-offered",
// "no-interface"). It matches ErrExtendedUnavailable.
type ExtendedUnavailableError struct {
	Origin string
	Why    string
}

func (e *ExtendedUnavailableError) Error() string {
	return fmt.Sprintf("fetcher: no extended card for %s: %s", e.Origin, e.Why)
}

// Is matches ErrExtendedUnavailable.
func (e *ExtendedUnavailableError) Is(target error) bool { return target == ErrExtendedUnavailable }

// ExtendedEndpoint is where and how an agent's extended card is asked for:
// the request URL (the JSON-RPC interface URL, or the HTTP+JSON GET URL:
// interface URL and path), the binding ("JSONRPC" or "HTTP+JSON"), the
// JSON-RPC method ("" for HTTP+JSON), the A2A-Version sent ("0.3" or "1.0")
// and the v1.0 JSON-RPC request's tenant, if the interface names one.
type ExtendedEndpoint struct {
	URL     string
	Binding string
	Method  string
	Version string
	Tenant  string
}

// Key is the endpoint's lease key: its URL with a fragment no public card
// key has (extended, with the method and tenant).
func (e ExtendedEndpoint) Key() string {
	q := url.Values{}
	q.Set("binding", e.Binding)
	q.Set("version", e.Version)
	if e.Method != "" {
		q.Set("method", e.Method)
	}
	if e.Tenant != "" {
		q.Set("tenant", e.Tenant)
	}
	return e.URL + "#" + extendedFragment + "?" + q.Encode()
}

// parseExtendedKey reads a Key back; ok is false for a public card key.
func parseExtendedKey(key string) (ExtendedEndpoint, bool) {
	u, frag, found := strings.Cut(key, "#"+extendedFragment+"?")
	if !found {
		return ExtendedEndpoint{}, false
	}
	q, err := url.ParseQuery(frag)
	if err != nil {
		return ExtendedEndpoint{}, false
	}
	e := ExtendedEndpoint{URL: u, Binding: q.Get("binding"), Method: q.Get("method"), Version: q.Get("version"), Tenant: q.Get("tenant")}
	return e, e.Binding == "JSONRPC" || e.Binding == "HTTP+JSON"
}

// IsExtendedKey reports that a card URL an observation carries is an
// extended card's lease key (ExtendedEndpoint.Key).
func IsExtendedKey(cardURL string) bool {
	_, ok := parseExtendedKey(cardURL)
	return ok
}

// ExtendedEndpointOf returns where the public card, served from cardURL,
// says its extended card is asked for: the first interface, in the card's
// order (preferred first), with a JSON-RPC or HTTP+JSON binding on the
// origin the card was served from. An interface on another origin is never
// asked (a card cannot send carddrift's credentials for one agent to
// another), and gRPC is not spoken. It fails with an
// *ExtendedUnavailableError.
func ExtendedEndpointOf(cardURL string, public *detector.Card) (ExtendedEndpoint, error) {
	origin, err := Origin(cardURL)
	if err != nil {
		return ExtendedEndpoint{}, &ExtendedUnavailableError{Origin: cardURL, Why: "no-interface"}
	}
	if public == nil || !public.Capabilities.ExtendedAgentCard {
		return ExtendedEndpoint{}, &ExtendedUnavailableError{Origin: origin, Why: "not-offered"}
	}
	for _, in := range public.Interfaces {
		if o, err := Origin(in.URL); err != nil || o != origin {
			continue
		}
		version := "1.0"
		if strings.HasPrefix(in.ProtocolVersion, "0.") {
			version = "0.3"
		}
		base := strings.TrimSuffix(in.URL, "/")
		switch in.ProtocolBinding {
		case "JSONRPC":
			e := ExtendedEndpoint{URL: in.URL, Binding: "JSONRPC", Method: MethodExtendedV10, Version: version}
			if version == "0.3" {
				e.Method = MethodExtendedV03
			} else {
				e.Tenant = in.Tenant
			}
			return e, nil
		case "HTTP+JSON":
			e := ExtendedEndpoint{URL: base + PathExtendedV10, Binding: "HTTP+JSON", Version: version}
			switch {
			case version == "0.3":
				e.URL = base + PathExtendedV03
			case in.Tenant != "":
				e.URL = base + "/" + url.PathEscape(in.Tenant) + PathExtendedV10
			}
			return e, nil
		}
	}
	return ExtendedEndpoint{}, &ExtendedUnavailableError{Origin: origin, Why: "no-interface"}
}

// HasCredentials reports that the Fetcher holds a credential for the origin
// of agentURL.
func (f *Fetcher) HasCredentials(agentURL string) bool {
	_, err := f.credential(agentURL)
	return err == nil
}

// ObserveExtended is Observe for the authenticated extended card of the
// agent whose public card is public (an observation ObserveAgent made): at
// ExtendedEndpointOf, with the credential held for its origin, leased under
// the endpoint's Key. The Observation's CardURL is that key; its Card, Raw,
// Digest and Fingerprint are the extended card's, and a signed extended
// card is verified with the keys trusted for the agent's origin.
//
// Errors: an *ExtendedUnavailableError (ErrExtendedUnavailable) when no
// extended card can be asked for; a *FetchError when it is unreachable —
// ReasonUnauthorized and ReasonForbidden for a 401 and a 403,
// ReasonRPCError for a JSON-RPC error answer, and the public card's reasons
// otherwise; an error wrapping ErrStore as Observe's.
func (f *Fetcher) ObserveExtended(ctx context.Context, public Observation, force bool) (Observation, error) {
	e, err := ExtendedEndpointOf(public.CardURL, public.Card)
	if err != nil {
		return observationAt(public.CardURL), err
	}
	if _, err := f.credential(e.URL); err != nil {
		return observationAt(e.Key()), err
	}
	obs, err := f.observeKey(ctx, e.Key(), force, f.opts.Now())
	if err == nil && obs.Card != nil && obs.Card.HasSignatures {
		obs.Signatures = f.VerifyAt(ctx, e.URL, obs.Raw)
	}
	return obs, err
}

// credential returns the credential for the origin of rawURL, or an
// *ExtendedUnavailableError (no-credentials).
func (f *Fetcher) credential(rawURL string) (Credential, error) {
	o, err := Origin(rawURL)
	if err == nil && f.opts.Credentials != nil {
		if c, ok := f.opts.Credentials.For(o); ok {
			return c, nil
		}
	}
	return Credential{}, &ExtendedUnavailableError{Origin: o, Why: "no-credentials"}
}

// fetchKey makes the fetch behind a lease key: an extended card's, or a
// public card's (Fetch).
func (f *Fetcher) fetchKey(ctx context.Context, req Request) (Observation, error) {
	if e, ok := parseExtendedKey(req.URL); ok {
		return f.fetchExtended(ctx, req.URL, e)
	}
	return f.Fetch(ctx, req)
}

// errCredentialRedirect: a credentialed request follows no redirect.
var errCredentialRedirect = fmt.Errorf("%w: a request that carries credentials follows no redirect", ErrRedirectRefused)

// fetchExtended makes one request for an extended card at e (key is its
// lease key, which the Observation carries), with the credential of e's
// origin, unconditionally, following no redirect.
func (f *Fetcher) fetchExtended(ctx context.Context, key string, e ExtendedEndpoint) (_ Observation, err error) {
	obs := observationAt(key)
	obs.Full = true
	cred, err := f.credential(e.URL)
	if err != nil {
		return obs, err
	}
	defer func() {
		if err != nil {
			err = scrub(err, cred) // whatever the error, never the credential
		}
	}()
	hreq, end, err := f.begin(ctx, e.URL)
	if err != nil {
		return obs, keyed(err, key)
	}
	defer end()
	ctx = hreq.Context()
	hreq.Header.Set("Accept", f.opts.Accept)
	hreq.Header.Set("A2A-Version", e.Version)
	hreq.Header.Set("Cache-Control", "no-cache")
	if e.Binding == "JSONRPC" {
		params := map[string]string{}
		if e.Tenant != "" {
			params["tenant"] = e.Tenant
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": e.Method, "params": params})
		hreq.Method = http.MethodPost
		hreq.Body = io.NopCloser(bytes.NewReader(body))
		hreq.ContentLength = int64(len(body))
		hreq.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		hreq.Header.Set("Content-Type", "application/json")
	}
	cred.apply(hreq)
	client := f.ext.client(f, e.URL, cred)

	start := time.Now()
	resp, err := client.Do(hreq)
	if err != nil {
		obs.Latency = time.Since(start)
		return obs, scrub(classifyTransport(key, ctx, err), cred)
	}
	defer resp.Body.Close()
	obs.Status = resp.StatusCode
	obs.CacheControl = strings.Join(resp.Header.Values("Cache-Control"), ", ")
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		obs.Latency = time.Since(start)
		fe := statusError(key, resp)
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			fe.Reason = ReasonUnauthorized
		case http.StatusForbidden:
			fe.Reason = ReasonForbidden
		}
		return obs, fe
	}
	raw, err := readBody(ctx, key, resp, f.opts.MaxBodyBytes)
	obs.Latency = time.Since(start)
	if err != nil {
		return obs, scrub(err, cred)
	}
	if e.Binding == "JSONRPC" {
		if raw, err = rpcResult(raw); err != nil {
			var fe *FetchError
			if errors.As(err, &fe) {
				fe.URL, fe.Status = key, resp.StatusCode
			}
			return obs, scrub(err, cred)
		}
	}
	return f.withCard(obs, resp, raw)
}

// keyed names key, not the request URL, in a *FetchError.
func keyed(err error, key string) error {
	var fe *FetchError
	if errors.As(err, &fe) {
		fe.URL = key
	}
	return err
}

// maxRPCErrorMessage bounds how much of a JSON-RPC error's message an error
// repeats.
const maxRPCErrorMessage = 200

// rpcResult returns the bytes of the result of a JSON-RPC response body
// exactly as served (they are the card whose digest is taken). The body
// must be strict JSON (jcs: no duplicate keys, valid UTF-8, bounded
// nesting), an object with exactly one of result and error. An error
// answer is ReasonRPCError (its code and a bounded, quoted message); any
// other shape is ReasonNotACard.
func rpcResult(body []byte) ([]byte, error) {
	if _, err := jcs.ParseObject(body, jcs.Limits{MaxBytes: DefaultMaxBodyBytes}); err != nil {
		return nil, classifyParse("", 0, err)
	}
	var members map[string]json.RawMessage // keys are unique: jcs checked
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, &FetchError{Reason: ReasonNotACard, Err: err}
	}
	result, rpcErr := members["result"], members["error"]
	switch {
	case rpcErr != nil && result == nil:
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(rpcErr, &e)
		msg := e.Message
		if len(msg) > maxRPCErrorMessage {
			msg = msg[:maxRPCErrorMessage]
		}
		return nil, &FetchError{Reason: ReasonRPCError, Err: fmt.Errorf("JSON-RPC error %d: %q", e.Code, msg)}
	case result == nil || rpcErr != nil:
		return nil, &FetchError{Reason: ReasonNotACard, Err: errors.New("a JSON-RPC response needs exactly one of result and error")}
	}
	return result, nil
}

// scrub removes every value of cred from the text of err (a server may echo
// a token back), keeping its Reason: an error that reaches an event, a log
// line or a lease never repeats a credential.
func scrub(err error, cred Credential) error {
	clean := func(s string) string {
		for _, h := range cred.headers {
			if v := h.Value.Reveal(); v != "" {
				s = strings.ReplaceAll(s, v, redacted)
			}
		}
		return s
	}
	var fe *FetchError
	if errors.As(err, &fe) {
		if fe.Err != nil {
			if msg := fe.Err.Error(); clean(msg) != msg {
				return &FetchError{URL: fe.URL, Reason: fe.Reason, Status: fe.Status, Err: errors.New(clean(msg))}
			}
		}
		return err
	}
	if msg := err.Error(); clean(msg) != msg {
		return errors.New(clean(msg))
	}
	return err
}

// extendedClients are the HTTP clients of credentialed requests: one that
// follows no redirect on the Fetcher's transport for header credentials,
// and, per origin, one on a transport of its own that presents the client
// certificate (only that origin's connections ever carry it).
type extendedClients struct {
	mu      sync.Mutex
	headers *http.Client
	certs   map[string]certClient // origin → client of the current certificate
}

type certClient struct {
	cert   *tls.Certificate
	client *http.Client
	tr     *http.Transport
}

// maxCertClients bounds the per-origin certificate transports kept.
const maxCertClients = 1024

func noRedirect(*http.Request, []*http.Request) error { return errCredentialRedirect }

// client returns the client for a credentialed request to rawURL.
func (x *extendedClients) client(f *Fetcher, rawURL string, cred Credential) *http.Client {
	x.mu.Lock()
	defer x.mu.Unlock()
	if cred.cert == nil {
		if x.headers == nil {
			x.headers = &http.Client{Transport: f.tr, CheckRedirect: noRedirect}
		}
		return x.headers
	}
	origin, _ := Origin(rawURL)
	if c, ok := x.certs[origin]; ok && c.cert == cred.cert {
		return c.client
	}
	if x.certs == nil {
		x.certs = make(map[string]certClient)
	}
	if old, ok := x.certs[origin]; ok {
		old.tr.CloseIdleConnections()
		delete(x.certs, origin)
	}
	if len(x.certs) >= maxCertClients {
		for k, c := range x.certs {
			c.tr.CloseIdleConnections()
			delete(x.certs, k)
			break
		}
	}
	tr := f.tr.Clone()
	cert := cred.cert
	tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	c := certClient{cert: cert, tr: tr, client: &http.Client{Transport: tr, CheckRedirect: noRedirect}}
	x.certs[origin] = c
	return c.client
}

// close closes the idle connections of the certificate transports.
func (x *extendedClients) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k, c := range x.certs {
		c.tr.CloseIdleConnections()
		delete(x.certs, k)
	}
}
