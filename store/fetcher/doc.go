// Package fetcher is the network edge of the detector: it fetches live agent
// cards safely and shares each observation across every worker for as long as
// the agent's cache lease lasts. Package detector itself stays pure; this
// package turns HTTP into detector.Card values or typed errors.
//
// # Fetching
//
// Fetcher.Fetch makes one request under fixed headers (Accept, A2A-Version,
// User-Agent: content negotiation must never look like drift), with connect
// and total timeouts, a body size limit, a redirect limit, TLS verification and
// an SSRF guard. The guard checks the resolved address of every connection —
// first request, each redirect hop, a name that rebinds — in the dialer's
// Control hook, before connect(2): loopback, private, link-local, CGNAT,
// multicast, reserved and cloud-metadata addresses are refused unless
// Options.Allow widens it. Proxies from the environment are ignored.
//
// Fetcher.FetchAgent is the one-shot look at an agent, for a command or a
// client rather than a worker: Fetch with the card URL resolution of
// ObserveAgent (below), without leases. carddrift pin and diff and
// a2aemit.ResolveCard fetch through it, so they see what a worker sees,
// under the guard their caller sets (Options.Allow).
//
// Every failure is a *FetchError whose Reason goes verbatim into
// card.unreachable; errors.Is matches a sentinel per reason (ErrTimeout,
// ErrRefusedAddress, ErrDuplicateKeys, ...). A body that does not parse as a
// card is unreachable, never drift.
//
// # Observing
//
// Fetcher.Observe is what the worker calls on a capability-dependent
// transition. Per card URL it
//
//   - coalesces concurrent callers in this process into one flight, which
//     runs on a goroutine owned by the Fetcher and bounded by its own budget,
//     not by any caller's context (callers may leave early);
//   - consults the shared store.Leases (with a LeaseFollower, a local
//     copy that a KV watch keeps current, trusted only while it is within
//     LeaseCopyLag of the bucket's head; writes stay compare-and-set on the
//     store): a fresh lease answers without any request; a stale one is claimed by compare-and-set, the winner fetches
//     (If-None-Match when it knows an ETag: a 304 reuses the digest and body
//     without rehashing) and records the new lease, and the other workers
//     wait for that result instead of fetching too. A stale lease of a card
//     known is claimed as the result that confirms it (Lease.Confirming):
//     the other workers use that claim at once, and the winner writes
//     again only if its fetch says otherwise, so a fetch that confirms the
//     card costs one lease write;
//   - derives the lease from Cache-Control max-age (minus Age), no-cache,
//     no-store and max-age=0 meaning the lower clamp, clamped to
//     [MinLease, MaxLease];
//   - makes an unconditional fetch every FullFetchInterval, which catches a
//     body that changed behind an ETag derived from the card version;
//   - with force (evidence of drift) bypasses lease and ETag, yet a full
//     fetch by any worker that completes after the force was asked satisfies
//     every forced caller: a burst of forced calls costs one fetch.
//
// Bodies are stored by digest in store.Cards and cached parsed in a
// byte-bounded LRU, so every Observation carries its Card. A per-host
// semaphore bounds concurrent fetches per host. Options.OnFetch sees every
// completed HTTP fetch once (for metrics), and Observation.Fetches says
// whether to publish it as card.observed: the lease that every worker
// shares keeps what the last card.observed said (Lease.Reported), so one
// is published when the card's digest, signer or result class changes,
// else one per Options.ObserveHeartbeat counting the fetches since.
//
// ObserveAgent resolves a card URL for an agent: the client's cardUrl, else
// /.well-known/agent-card.json, falling back to the legacy
// /.well-known/agent.json on 404, 405 or 410 (remembered per agent). Card
// URLs are keyed in their CanonicalURL form, so spellings of one URL share a
// lease. ParseAllow reads the --fetch-allow list.
//
// # Signed cards
//
// ObserveAgent verifies the signatures of a signed card (VerifyAt: A2A
// v1.0.1 §8.4, through package detector/signature) and puts what it found in
// Observation.Signatures, so that the task core can record and compare who
// signed a card. Keys come from Options.Signatures, and trust is scoped: the
// key sets trusted for every agent (a file, or a URL fetched through this
// Fetcher), those trusted for the origin the card is served from
// (SignatureOptions.Scoped), and the key set a signature names in its jku
// (https only unless JKUAny) — the signer's own claim, recorded with source
// "jku", never trust. Key sets at URLs are fetched by a JWKS — the same SSRF
// guard, timeouts and per-host limit as card fetches, its own size limit,
// cached by Cache-Control. The outcome is kept per body and trust scope
// (bounded in count and bytes), so a card observed again from a lease or
// after a 304 costs a hash. A key set that cannot be fetched makes a
// signature unverified, never invalid.
// Signatures are not part of the digest: the parsed-card cache keeps the
// newest body seen under a digest, so a card re-signed with the same content
// is observed with its new signatures.
//
// # Goroutines
//
// The only goroutines are flights: one per card URL being observed, started
// by Observe, exiting when the observation completes (within
// 2×TotalTimeout + 6×StoreTimeout) or promptly after Close, which waits for
// them.
package fetcher
