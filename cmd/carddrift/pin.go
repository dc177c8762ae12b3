package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/carddrift/carddrift/detector"
)

// pinFlags are the flags of carddrift pin.
type pinFlags struct {
	json  bool
	trust trustFlags
	fetch fetchFlags
}

// register adds pin's flags.
func (f *pinFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.json, "json", false, "print one JSON object")
	f.trust.register(fs)
	f.fetch.register(fs)
}

// pinOutput is the --json document of carddrift pin.
type pinOutput struct {
	Source           string   `json:"source"`
	Name             string   `json:"name"`
	Digest           string   `json:"digest"`
	Fingerprint      string   `json:"fingerprint"`
	StructuralDigest string   `json:"structuralDigest"`
	Version          string   `json:"version"`
	ProtocolVersions []string `json:"protocolVersions"`
	Shape            string   `json:"shape"`
	Skills           []string `json:"skills"`
	ETag             string   `json:"etag,omitempty"`
	CacheControl     string   `json:"cacheControl,omitempty"`
	// Conformance lists the parts of the card that follow no known version's
	// schema; carddrift reads around them (never a refusal).
	Conformance []detector.Nonconformance `json:"conformance"`
	// Signatures are what verifying the card's signatures found, one per
	// entry of its "signatures" array (kid, alg, verified, reason; the key's
	// thumbprint, source and jku when known); [] for an unsigned card.
	Signatures []detector.Signature `json:"signatures"`
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
		Version: c.Version, ProtocolVersions: c.ProtocolVersions(), Shape: c.Shape,
		ETag: src.ETag, CacheControl: src.CacheControl,
	}
	if out.ProtocolVersions == nil {
		out.ProtocolVersions = []string{}
	}
	out.Conformance = c.Conformance
	if out.Conformance == nil {
		out.Conformance = []detector.Nonconformance{}
	}
	out.Signatures = []detector.Signature{}
	if c.HasSignatures {
		out.Signatures = append(out.Signatures, fe.VerifyAt(ctx, src.Where, src.Raw)...)
	}
	out.Skills = make([]string, 0, len(c.Skills))
	for _, s := range c.Skills {
		out.Skills = append(out.Skills, s.ID)
	}
	if f.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	w := e.stdout
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
		return nil
	}
	fmt.Fprintf(w, "conformance        %d part(s) follow no known schema (read around):\n", len(out.Conformance))
	for _, n := range out.Conformance {
		path := n.Path
		if path == "" {
			path = "(the card)"
		}
		fmt.Fprintf(w, "  %-24s %s\n", path, n.Message)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// describeSignature says what verifying a signature found, for pin's text
// output.
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
