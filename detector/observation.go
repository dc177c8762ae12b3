package detector

import "time"

// Observation is one observation of an agent's live card: what was read at a
// card URL, when, and what verifying its signatures found. The fetcher makes
// it (store/fetcher.Observation carries it) and the task core judges it.
type Observation struct {
	// CardURL is the URL requested (redirects are followed but not
	// recorded).
	CardURL string
	// Digest is the card's canonical digest ("sha256:<hex>").
	Digest string
	// Fingerprint is the card's skill fingerprint (Fingerprint).
	Fingerprint string
	// ETag is the entity tag to revalidate with ("" when the server sent
	// none or an unusable one).
	ETag string
	// Card is the parsed card; shared between callers: read-only.
	Card *Card
	// FetchedAt is when the fetch or revalidation behind it completed.
	FetchedAt time.Time
	// VerifiedAt is when an unconditional (full) fetch last confirmed the
	// card's content: a 304 behind an ETag derived from the card's version
	// refreshes FetchedAt without looking at the content, so only
	// VerifiedAt says the content was current at a given time.
	VerifiedAt time.Time
	// Signatures are what verifying the card's signatures found, one per
	// entry of its "signatures" array; nil for an unsigned card. A signed
	// card with nil Signatures was not verified: its signer is then
	// unknown.
	Signatures []Signature
	// Window is the consistency window split brain is judged over (the
	// fetcher's ConsistencyWindow).
	Window time.Duration
	// Seen are the digests the agent served within the consistency window,
	// with when each was first and last seen (from the shared lease): the
	// task core tells a stale observation from a newer one with them.
	Seen []Sighting
	// Disagreeing are the digests the agent served within Window while its
	// replicas disagree (split brain, as Replicas.Disagree decides); nil
	// otherwise. While set, every card.drift of a task on the agent carries
	// a replicas-disagree finding.
	Disagreeing []string
}
