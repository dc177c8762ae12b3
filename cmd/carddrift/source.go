package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// cardSource is a card as read by the CLI, with the HTTP facts pin reports.
type cardSource struct {
	Where        string // file path, "-" or the URL the card was read from
	Raw          []byte
	ETag         string
	CacheControl string
}

const cliMaxCardBytes = 1 << 20

// cliHTTPClient fetches cards for diff and pin: an operator's command, so no
// SSRF guard, but the same fixed headers, timeouts and size limit as the
// workers.
func cliHTTPClient() *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return fmt.Errorf("stopped after %d redirects", len(via))
			}
			return nil
		},
	}
}

// readSource reads a card from a file path, "-" (stdin) or an http(s) URL. A
// URL with an empty path resolves /.well-known/agent-card.json, falling back
// to the legacy /.well-known/agent.json.
func readSource(ctx context.Context, e *env, where string) (cardSource, error) {
	if where == "-" {
		raw, err := io.ReadAll(io.LimitReader(e.stdin, cliMaxCardBytes+1))
		if err != nil {
			return cardSource{}, fmt.Errorf("read stdin: %w", err)
		}
		return cardSource{Where: "-", Raw: raw}, nil
	}
	if strings.HasPrefix(where, "http://") || strings.HasPrefix(where, "https://") {
		return fetchSource(ctx, where)
	}
	f, err := os.Open(where)
	if err != nil {
		return cardSource{}, usageError{err}
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, cliMaxCardBytes+1))
	if err != nil {
		return cardSource{}, fmt.Errorf("read %s: %w", where, err)
	}
	return cardSource{Where: where, Raw: raw}, nil
}

func fetchSource(ctx context.Context, raw string) (cardSource, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return cardSource{}, usagef("bad URL %q: %v", raw, err)
	}
	candidates := []string{u.String()}
	if u.Path == "" || u.Path == "/" {
		base := *u
		base.Path = "/.well-known/agent-card.json"
		legacy := *u
		legacy.Path = "/.well-known/agent.json"
		candidates = []string{base.String(), legacy.String()}
	}
	client := cliHTTPClient()
	var lastErr error
	for i, c := range candidates {
		src, status, err := get(ctx, client, c)
		if err == nil {
			return src, nil
		}
		lastErr = err
		if i < len(candidates)-1 && (status == http.StatusNotFound || status == http.StatusGone || status == http.StatusMethodNotAllowed) {
			continue
		}
		break
	}
	return cardSource{}, lastErr
}

func get(ctx context.Context, client *http.Client, u string) (cardSource, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return cardSource{}, 0, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("User-Agent", "carddrift")
	resp, err := client.Do(req)
	if err != nil {
		return cardSource{}, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return cardSource{}, resp.StatusCode, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, cliMaxCardBytes+1))
	if err != nil {
		return cardSource{}, resp.StatusCode, fmt.Errorf("GET %s: %w", u, err)
	}
	return cardSource{Where: u, Raw: raw, ETag: resp.Header.Get("ETag"), CacheControl: resp.Header.Get("Cache-Control")}, resp.StatusCode, nil
}
