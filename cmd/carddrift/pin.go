package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/carddrift/carddrift/detector"
	"github.com/carddrift/carddrift/events/inspect/render"
	"github.com/carddrift/carddrift/store/fetcher"
)

type pinFlags struct {
	json  bool
	trust trustFlags
	fetch fetchFlags
}

func (f *pinFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.json, "json", false, "print one JSON object")
	f.trust.register(fs)
	f.fetch.register(fs)
}

type pinOutput struct {
	Source           string                    `json:"source"`
	Name             string                    `json:"name"`
	Digest           string                    `json:"digest"`
	Fingerprint      string                    `json:"fingerprint"`
	StructuralDigest string                    `json:"structuralDigest"`
	Version          string                    `json:"version"`
	ProtocolVersions []string                  `json:"protocolVersions"`
	Shape            string                    `json:"shape"`
	Skills           []string                  `json:"skills"`
	ETag             string                    `json:"etag,omitempty"`
	CacheControl     string                    `json:"cacheControl,omitempty"`
	Conformance      []detector.Nonconformance `json:"conformance"`
	Signatures       []detector.Signature      `json:"signatures"` // one per entry of its "signatures"
}

func (f *pinFlags) run(ctx context.Context, e *env, args []string) error {
	if len(args) != 1 {
		return usagef("pin needs exactly one URL or file, got %d argument(s)", len(args))
	}
	where := args[0]
	sigOpts, skipped, err := f.trust.options()
	if err != nil {
		return err
	}
	for _, err := range skipped {
		fmt.Fprintf(e.stderr, "carddrift: a trusted key that cannot verify signatures is skipped: %v\n", err)
	}
	fe, err := f.fetch.fetcher(sigOpts)
	if err != nil {
		return err
	}
	defer fe.Close()
	src, c, digest, err := readCard(ctx, e, where, fe)
	if err != nil {
		return err
	}
	out := pinOutput{
		Source: src.Where, Name: c.Name, Digest: digest,
		Fingerprint: detector.Fingerprint(c), StructuralDigest: detector.StructuralDigest(c),
		Version: c.Version, ProtocolVersions: append([]string{}, c.ProtocolVersions()...), Shape: c.Shape,
		ETag: src.ETag, CacheControl: src.CacheControl, Skills: make([]string, 0, len(c.Skills)),
		Conformance: append([]detector.Nonconformance{}, c.Conformance...), Signatures: []detector.Signature{},
	}
	if c.HasSignatures {
		out.Signatures = append(out.Signatures, fe.VerifyAt(ctx, src.Where, src.Raw)...)
	}
	for _, s := range c.Skills {
		out.Skills = append(out.Skills, s.ID)
	}
	return printResult(e.stdout, f.json, out, func(w io.Writer) { writePinText(w, &out) })
}

func writePinText(w io.Writer, out *pinOutput) {
	for _, row := range [][2]string{
		{"source", out.Source}, {"name", out.Name}, {"digest", out.Digest}, {"fingerprint", out.Fingerprint},
		{"structural digest", out.StructuralDigest}, {"version", orNone(out.Version)},
		{"protocol versions", orNone(strings.Join(out.ProtocolVersions, ", "))}, {"shape", out.Shape},
		{"skills", orNone(strings.Join(out.Skills, ", "))}, {"etag", orNone(out.ETag)}, {"cache-control", orNone(out.CacheControl)},
	} {
		fmt.Fprintf(w, "%-19s%s\n", row[0], row[1])
	}
	if len(out.Signatures) == 0 {
		fmt.Fprintf(w, "signatures         none\n")
	} else {
		fmt.Fprintf(w, "signatures         %d:\n", len(out.Signatures))
		for i, s := range out.Signatures {
			fmt.Fprintf(w, "  %d  kid %-20q %-7s %s\n", i, s.KeyID, s.Alg, describeSignature(s))
		}
	}
	if len(out.Conformance) == 0 {
		fmt.Fprintf(w, "conformance        ok\n")
		return
	}
	fmt.Fprintf(w, "conformance        %d part(s) follow no known schema (read around):\n", len(out.Conformance))
	for _, n := range out.Conformance {
		path := n.Path
		if path == "" {
			path = "(the card)"
		}
		fmt.Fprintf(w, "  %-24s %s\n", path, n.Message)
	}
}

// printResult writes v as indented JSON (--json), else what text writes,
// to w in one write.
func printResult(w io.Writer, asJSON bool, v any, text func(io.Writer)) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return render.Buffered(w, text)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func describeSignature(s detector.Signature) string {
	var b strings.Builder
	if s.Verified {
		fmt.Fprintf(&b, "verified")
	} else {
		fmt.Fprintf(&b, "NOT verified: %s", s.Reason)
	}
	if s.Thumbprint != "" {
		fmt.Fprintf(&b, "  key %s", s.Thumbprint)
	}
	if s.Source != "" {
		fmt.Fprintf(&b, " (%s)", s.Source)
	}
	if s.JKU != "" {
		fmt.Fprintf(&b, "  jku %s", s.JKU)
	}
	return b.String()
}

type cardSource struct {
	Where        string // file path, "-" or the URL the card was read from
	Raw          []byte
	ETag         string
	CacheControl string
}

const cliMaxCardBytes = 1 << 20

// cliFetchAllow is the default of --fetch-allow for pin and diff: every
// address but cloud metadata. Pinning an agent on localhost or a private
// network is a normal use of an operator's command.
const cliFetchAllow = "0.0.0.0/0,::/0"

type fetchFlags struct {
	allow string
}

func (f *fetchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.allow, "fetch-allow", cliFetchAllow, "CIDR[,CIDR…] the SSRF guard lets card (and key set) fetches reach; "+
		"the default reaches any address but cloud metadata; give serve's value to see what its workers see (empty: the workers' default guard)")
}

// fetcher returns the workers' Fetcher with --fetch-allow and sig. Close it.
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
// an http(s) URL.
func readSource(ctx context.Context, e *env, where string, f *fetcher.Fetcher) (cardSource, error) {
	if f != nil && (strings.HasPrefix(where, "http://") || strings.HasPrefix(where, "https://")) {
		return fetchSource(ctx, f, where)
	}
	r, name := e.stdin, "stdin"
	if where != "-" {
		file, err := os.Open(where)
		if err != nil {
			return cardSource{}, usageError{err}
		}
		defer file.Close()
		r, name = file, where
	}
	raw, err := io.ReadAll(io.LimitReader(r, cliMaxCardBytes+1))
	if err != nil {
		return cardSource{}, fmt.Errorf("read %s: %w", name, err)
	}
	return cardSource{Where: where, Raw: raw}, nil
}

// readCard reads a card, parses it and computes its digest; a card that
// cannot be read or parsed is a usage error.
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

// fetchSource fetches the card a worker would observe for where: a URL
// whose path ends in .json is a card URL, any other the agent's
// (fetcher.CardURLs).
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
