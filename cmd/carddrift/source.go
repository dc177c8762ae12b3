package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/store/fetcher"
)

// cardSource is a card as read by the CLI, with the HTTP facts pin reports.
type cardSource struct {
	Where        string // file path, "-" or the URL the card was read from
	Raw          []byte
	ETag         string
	CacheControl string
}

const cliMaxCardBytes = 1 << 20

// cliFetchAllow is the default of --fetch-allow for pin and diff: every
// address (the cloud-metadata ones stay refused, as they do for a worker
// whose --fetch-allow covers them). Pinning an agent on localhost or a
// private network is a normal use of an operator's command.
const cliFetchAllow = "0.0.0.0/0,::/0"

// fetchFlags are the fetch flags of the commands that read cards from URLs
// (pin, diff).
type fetchFlags struct {
	allow string
}

func (f *fetchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.allow, "fetch-allow", cliFetchAllow, "CIDR[,CIDR…] the SSRF guard lets card (and key set) fetches reach; "+
		"the default reaches any address but cloud metadata; give serve's value to see what its workers see (empty: the workers' default guard)")
}

// fetcher returns the Fetcher the command reads URLs with: the workers'
// fetcher (fixed headers, timeouts, size and redirect limits, TLS, the SSRF
// guard with --fetch-allow) and, for pin, the signature options. Close it.
func (f *fetchFlags) fetcher(sig fetcher.SignatureOptions) (*fetcher.Fetcher, error) {
	allow, err := fetcher.ParseAllow(f.allow)
	if err != nil {
		return nil, usageError{fmt.Errorf("--fetch-allow: %w", err)}
	}
	fe, err := fetcher.New(fetcher.Options{Allow: allow, Signatures: sig})
	if err != nil {
		return nil, usageError{err}
	}
	return fe, nil
}

// readSource reads a card from a file path, "-" (stdin) or, with a Fetcher,
// an http(s) URL (fetchSource).
func readSource(ctx context.Context, e *env, where string, f *fetcher.Fetcher) (cardSource, error) {
	if where == "-" {
		raw, err := io.ReadAll(io.LimitReader(e.stdin, cliMaxCardBytes+1))
		if err != nil {
			return cardSource{}, fmt.Errorf("read stdin: %w", err)
		}
		return cardSource{Where: "-", Raw: raw}, nil
	}
	if f != nil && (strings.HasPrefix(where, "http://") || strings.HasPrefix(where, "https://")) {
		return fetchSource(ctx, f, where)
	}
	file, err := os.Open(where)
	if err != nil {
		return cardSource{}, usageError{err}
	}
	defer file.Close()
	raw, err := io.ReadAll(io.LimitReader(file, cliMaxCardBytes+1))
	if err != nil {
		return cardSource{}, fmt.Errorf("read %s: %w", where, err)
	}
	return cardSource{Where: where, Raw: raw}, nil
}

// readCard reads a card (readSource), parses it and computes its digest; a
// card that cannot be read or parsed is a usage error.
func readCard(ctx context.Context, e *env, where string, f *fetcher.Fetcher) (src cardSource, c *detector.Card, digest string, err error) {
	if src, err = readSource(ctx, e, where, f); err != nil {
		return src, nil, "", usageError{err}
	}
	if c, err = detector.Parse(src.Raw); err != nil {
		return src, nil, "", usageError{fmt.Errorf("%s: %w", src.Where, err)}
	}
	if digest, err = detector.Digest(src.Raw); err != nil {
		return src, nil, "", usageError{fmt.Errorf("%s: %w", src.Where, err)}
	}
	return src, c, digest, nil
}

// fetchSource fetches the card a worker would observe for where, through
// f.FetchAgent: a URL whose path ends in .json is a card URL (as a client's
// cardUrl is) and is fetched as it is; any other URL is the agent's, and
// resolves as the workers resolve it (fetcher.CardURLs: the URL's path plus
// /.well-known/agent-card.json, then the legacy /.well-known/agent.json on
// 404, 405 or 410).
func fetchSource(ctx context.Context, f *fetcher.Fetcher, where string) (cardSource, error) {
	u, err := url.Parse(where)
	if err != nil {
		return cardSource{}, usagef("bad URL %q: %v", where, err)
	}
	agentURL, cardURL := where, ""
	if strings.HasSuffix(u.Path, ".json") {
		cardURL = where
	}
	obs, err := f.FetchAgent(ctx, agentURL, cardURL)
	if err != nil {
		return cardSource{}, err
	}
	return cardSource{Where: obs.CardURL, Raw: obs.Raw, ETag: obs.ETag, CacheControl: obs.CacheControl}, nil
}
