// Package fetcher is the network edge of the detector: it fetches live agent
// cards safely and shares each observation across every worker for as long as
// the agent's cache lease lasts (DESIGN, Lease). Package detector itself stays
// pure; this package turns HTTP into detector.Card values or typed errors.
//
// Fetcher.Fetch makes one request under fixed headers (content negotiation
// must never look like drift), timeouts, a body limit, a redirect limit, TLS
// verification and an SSRF guard that checks the resolved address of every
// connection in the dialer's Control hook, before connect(2) (Options.Allow
// widens it). Every failure is a *FetchError whose Reason goes verbatim into
// card.unreachable; a body that does not parse as a card is unreachable,
// never drift. FetchAgent is the one-shot look a command or client takes.
//
// Fetcher.Observe is what the worker calls on a capability-dependent
// transition. Per card URL (in CanonicalURL form) it coalesces concurrent
// callers into one flight owned by the Fetcher; consults the shared
// store.Leases (through a local copy a KV watch keeps current, with a
// LeaseFollower); answers from a fresh lease without a request, or fetches
// (If-None-Match when it knows an ETag) and records the result with one
// compare-and-set on the revision it read. A worker that loses that race
// uses the winner's record, or advances from it when it saw another card
// (the window of live digests keeps both): at most one fetch per worker
// per lease, at most one lease write per fetch. Observation.Fetches says whether
// to publish card.observed (Options.ObserveHeartbeat), decided by the write
// that wins. ObserveAgent resolves the well-known card URLs, verifies
// signed cards (VerifyAt, with scoped trust: SignatureOptions) and
// ObserveExtended fetches authenticated extended cards (Credentials).
//
// The only goroutines are flights (exiting within TotalTimeout +
// 6×StoreTimeout, or promptly after Close, which waits for them) and the
// lease copy's watch, which runs until Close.
package fetcher
