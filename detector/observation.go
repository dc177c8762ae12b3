package detector

import "time"

// Observation is one observation of an agent's live card: what was read at a
// card URL, when, and what verifying its signatures found. The fetcher makes
// it and the task core judges it.
type Observation struct {
	CardURL     string // as requested (redirects are not recorded)
	Digest      string
	Fingerprint string
	ETag        string // "" when the server sent none or an unusable one
	Card        *Card  // shared between callers: read-only
	// FetchedAt is when the fetch or revalidation behind it completed.
	FetchedAt time.Time
	// VerifiedAt is when a full fetch last confirmed the content: a 304
	// behind a version-derived ETag refreshes FetchedAt without looking.
	VerifiedAt time.Time
	// Signatures: nil for an unsigned card; nil on a signed one means its
	// signer is unknown.
	Signatures []Signature
	// Window is the consistency window split brain is judged over.
	Window time.Duration
	// Seen are the digests the agent served within Window (from the lease),
	// by which the task core tells a stale observation from a newer one.
	Seen []Sighting
	// Disagreeing are the digests served within Window while the replicas
	// disagree (Replicas.Disagree); nil otherwise.
	Disagreeing []string
}
