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
// LeaseFollower); answers from a fresh lease without a request, or claims a
// stale one by compare-and-set, the winner fetching (If-None-Match when it
// knows an ETag) while the other workers wait for its result. With
// Options.ConfirmingClaims (off by default) a stale lease of a known card
// is claimed as the result that confirms it (Lease.Confirming), so a fetch
// that confirms the card costs one lease write. Observation.Fetches says whether to publish card.observed
// (Options.ObserveHeartbeat). ObserveAgent resolves the well-known card
// URLs, verifies signed cards (VerifyAt, with scoped trust: SignatureOptions)
// and ObserveExtended fetches authenticated extended cards (Credentials).
//
// The only goroutines are flights (exiting within 2×TotalTimeout +
// 6×StoreTimeout, or promptly after Close, which waits for them) and the
// lease copy's watch, which runs until Close.
package fetcher
