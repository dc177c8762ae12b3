package fetcher

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Well-known card paths, current first.
const (
	WellKnownPath       = "/.well-known/agent-card.json" // A2A v0.3 and later
	LegacyWellKnownPath = "/.well-known/agent.json"      // A2A up to v0.2.x
)

// maxLegacyBases bounds how many agents the Fetcher remembers as legacy.
const maxLegacyBases = 1 << 14

// CardURLs returns the card URLs to try for an agent base URL: the base's
// path joined with WellKnownPath, then with LegacyWellKnownPath (as the A2A
// SDKs' card resolvers join them). A URL that already ends in one of the two
// paths is returned alone. Query and fragment are dropped.
func CardURLs(agentURL string) ([]string, error) {
	u, err := parseHTTPURL(agentURL)
	if err != nil {
		return nil, err
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	if strings.HasSuffix(u.Path, WellKnownPath) || strings.HasSuffix(u.Path, LegacyWellKnownPath) {
		return []string{u.String()}, nil
	}
	base := strings.TrimSuffix(u.String(), "/")
	return []string{base + WellKnownPath, base + LegacyWellKnownPath}, nil
}

// ObserveAgent is Observe for a task's agent: cardURL when the client gave
// one, else the agent's well-known card URL (see CardURLs). The legacy
// agent.json is tried only when agent-card.json answers 404, 405 or 410; the
// Fetcher then remembers that this agent is legacy and asks agent.json first
// next time (falling back the other way the same way). The Observation's
// CardURL says which URL answered. When both fail, the error is that of the
// first URL tried.
//
// The Observation's Signatures say who signed the card: a signed card is
// verified (VerifyAt, with the keys trusted for the origin of the card URL)
// once per body, so a 304 or a fresh lease of it costs a hash.
func (f *Fetcher) ObserveAgent(ctx context.Context, agentURL, cardURL string, force bool) (Observation, error) {
	obs, err := f.observeAgent(ctx, agentURL, cardURL, force)
	if err == nil && obs.Card != nil && obs.Card.HasSignatures {
		obs.Signatures = f.VerifyAt(ctx, obs.CardURL, obs.Raw)
	}
	return obs, err
}

func (f *Fetcher) observeAgent(ctx context.Context, agentURL, cardURL string, force bool) (Observation, error) {
	observe := func(u string) (Observation, error) { return f.Observe(ctx, u, force) }
	if cardURL != "" {
		return observe(cardURL)
	}
	urls, err := CardURLs(agentURL)
	if err != nil {
		return observationAt(agentURL), err
	}
	if len(urls) == 1 {
		return observe(urls[0])
	}
	base := urls[0][:len(urls[0])-len(WellKnownPath)]
	f.mu.Lock()
	legacy := f.legacy[base]
	f.mu.Unlock()
	if legacy {
		urls[0], urls[1] = urls[1], urls[0]
	}
	obs, second, err := firstCard(urls, observe)
	if second {
		f.rememberLegacy(base, !legacy)
	}
	return obs, err
}

// FetchAgent fetches an agent's card once, resolved as ObserveAgent
// resolves it: cardURL when given, else the agent's well-known card URL
// (CardURLs), then the legacy agent.json when agent-card.json answers 404,
// 405 or 410. Each request is a Fetch: the workers' fixed headers, SSRF
// guard, timeouts and limits, and no lease, coalescing or memory of legacy
// agents; signatures are not verified (VerifyAt does that). It is the one
// look at an agent that a command or a client takes (carddrift pin and
// diff, a2aemit.ResolveCard), so that it sees what a worker sees. When both
// URLs fail, the error is that of the first (a *FetchError), naming the
// second's.
func (f *Fetcher) FetchAgent(ctx context.Context, agentURL, cardURL string) (Observation, error) {
	fetch := func(u string) (Observation, error) { return f.Fetch(ctx, Request{URL: u}) }
	if cardURL != "" {
		return fetch(cardURL)
	}
	urls, err := CardURLs(agentURL)
	if err != nil {
		return observationAt(agentURL), err
	}
	obs, _, err := firstCard(urls, fetch)
	return obs, err
}

// firstCard tries the card URLs of an agent in order with get: the second
// only when the first has no card there (notThere). second reports that the
// second answered; when both fail, the error is the first's.
func firstCard(urls []string, get func(string) (Observation, error)) (obs Observation, second bool, err error) {
	obs, firstErr := get(urls[0])
	if len(urls) == 1 || firstErr == nil || !notThere(firstErr) {
		return obs, false, firstErr
	}
	if obs, err = get(urls[1]); err != nil {
		return observationAt(urls[0]), false, fmt.Errorf("%w (then %s: %w)", firstErr, urls[1], err)
	}
	return obs, true, nil
}

func (f *Fetcher) rememberLegacy(base string, legacy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !legacy {
		delete(f.legacy, base)
		return
	}
	if len(f.legacy) >= maxLegacyBases {
		for k := range f.legacy { // drop an arbitrary entry: costs one 404 later
			delete(f.legacy, k)
			break
		}
	}
	f.legacy[base] = true
}

// CanonicalURL returns the form of a card URL that Observe keys flights and
// leases by, so that spellings of one URL share one lease: scheme and host
// lower-cased, the scheme's default port and the fragment dropped, an empty
// path made "/". It fails with ReasonInvalidURL unless the URL is an absolute
// http or https URL.
func CanonicalURL(raw string) (string, error) {
	u, err := parseHTTPURL(raw)
	if err != nil {
		return "", err
	}
	u.Host = canonicalHost(u)
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path, u.RawPath = "/", ""
	}
	return u.String(), nil
}

// canonicalHost is the host[:port] of u (parsed by parseHTTPURL) as
// CanonicalURL and Origin write it: the host lower-cased, an IPv6 host in
// brackets, the scheme's default port (80 for http, 443 for https) left out.
func canonicalHost(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return host
}

// parseHTTPURL parses an absolute http or https URL with a host, or fails
// with ReasonInvalidURL. The scheme is lower-cased.
func parseHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &FetchError{URL: raw, Reason: ReasonInvalidURL, Err: err}
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "" {
		return nil, &FetchError{URL: raw, Reason: ReasonInvalidURL, Err: errors.New("need an absolute http or https URL with a host")}
	}
	return u, nil
}

// notThere reports a status that means "no card at this path".
func notThere(err error) bool {
	var fe *FetchError
	if !errors.As(err, &fe) || fe.Reason != ReasonStatus {
		return false
	}
	switch fe.Status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusGone:
		return true
	}
	return false
}
