package a2aemit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
)

// Well-known card paths, current first (as the a2a-go resolver and
// carddrift's fetcher use them).
const (
	WellKnownPath       = "/.well-known/agent-card.json"
	LegacyWellKnownPath = "/.well-known/agent.json"
)

// MaxCardBytes bounds a card body ResolveCard reads.
const MaxCardBytes = 1 << 20

// Card is an agent card as a client discovered it: the a2a-go struct to
// build the client from, and the body as served, which the struct cannot
// reproduce.
type Card struct {
	AgentCard *a2a.AgentCard
	// Raw is the body as served: pass it as Options.RawCard.
	Raw []byte
	// URL is the card URL that answered: pass it as Options.CardURL.
	URL string
}

// ErrCardStatus is wrapped by ResolveCard when no card URL answered 200.
var ErrCardStatus = errors.New("a2aemit: card request failed")

// ResolveCard fetches the public card of the agent at baseURL with client
// (http.DefaultClient when nil): baseURL + WellKnownPath, falling back to
// LegacyWellKnownPath on 404. It returns the parsed struct and the raw
// bytes. A body over MaxCardBytes, a non-200 status (ErrCardStatus) or a
// body that does not decode into a2a.AgentCard is an error.
//
// This is the client's own discovery, with the client's HTTP settings; it
// applies no SSRF guard (carddrift's fetcher does, for the workers).
func ResolveCard(ctx context.Context, client *http.Client, baseURL string) (*Card, error) {
	if client == nil {
		client = http.DefaultClient
	}
	base := strings.TrimSuffix(baseURL, "/")
	var firstErr error
	for _, path := range []string{WellKnownPath, LegacyWellKnownPath} {
		c, status, err := getCard(ctx, client, base+path)
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if status != http.StatusNotFound {
			break
		}
	}
	return nil, firstErr
}

func getCard(ctx context.Context, client *http.Client, cardURL string) (*Card, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cardURL, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("a2aemit: card %s: %w", cardURL, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("a2aemit: card %s: %w", cardURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, fmt.Errorf("%w: %s: HTTP %d", ErrCardStatus, cardURL, resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxCardBytes+1))
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("a2aemit: card %s: %w", cardURL, err)
	}
	if len(raw) > MaxCardBytes {
		return nil, resp.StatusCode, fmt.Errorf("a2aemit: card %s: body over %d bytes", cardURL, MaxCardBytes)
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(raw, &card); err != nil {
		return nil, resp.StatusCode, fmt.Errorf("a2aemit: card %s: %w", cardURL, err)
	}
	return &Card{AgentCard: &card, Raw: raw, URL: cardURL}, resp.StatusCode, nil
}
