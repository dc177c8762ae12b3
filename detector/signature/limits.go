package signature

import (
	"cmp"
	"sync/atomic"
	"time"
)

// Limits bound the work Verify does for one card, whoever wrote it: without
// them a card of 16 ES512 signatures whose kid names 100 keys, over three
// canonical forms, costs 4,800 P-521 verifications (about 17 s of CPU). A
// real card (one signature, two during a key rotation, each kid naming one
// key) needs at most six, well within the defaults. What a limit stops is in
// the Result (ReasonNotChecked, ReasonOverLimit). A zero field takes its
// default (DefaultLimits); there is no "unlimited".
type Limits struct {
	// Signatures is how many entries of "signatures" are checked, in order:
	// each costs a key lookup (perhaps a key set fetch). Default
	// MaxSignatures (16). Further entries are neither parsed nor looked
	// up: one ReasonNotChecked Result stands for them all.
	Signatures int
	// KeysPerSignature is how many keys that fit a signature's alg its kid
	// may name (default DefaultKeysPerSignature, 2). A kid names one key
	// (RFC 7517 §4.5: keys of a set SHOULD have distinct kids), two while
	// a key is replaced under its old kid; a signature whose kid names more
	// is ReasonOverLimit and costs no verification at all.
	KeysPerSignature int
	// Forms is how many distinct canonical forms (Forms, in that order) are
	// tried per key (default, and at most, all of them: 3). A signature that
	// verifies over none of them while the card has more distinct forms
	// than this is ReasonOverLimit; with no more, ReasonInvalidSignature.
	Forms int
	// Operations is how many public-key operations (one signature checked
	// with one key over one form) the whole card may cost (default
	// DefaultOperations, 8). A signature that would need one more once they
	// are spent is ReasonOverLimit. This is the bound that holds the cost of
	// a card: Operations × the cost of the dearest operation (an ES512
	// check, about 3.5 ms on a loaded 2-core machine).
	Operations int
	// Time is how long checking the card may take, key lookups excluded
	// (they are I/O, bounded by whoever does them: the fetcher's timeouts).
	// Default DefaultTime, 2 s: a backstop for costs that Operations does not
	// count, far above what a card within the other limits takes (under
	// 50 ms). A signature that needs an operation once it is spent is
	// ReasonOverLimit.
	Time time.Duration
}

// Defaults of Limits.
const (
	// MaxSignatures is the default of Limits.Signatures: how many signatures
	// of one card are checked. Real cards carry one, or two during a key
	// rotation.
	MaxSignatures = 16
	// DefaultKeysPerSignature is the default of Limits.KeysPerSignature.
	DefaultKeysPerSignature = 2
	// DefaultOperations is the default of Limits.Operations: a rotation's
	// two signatures over each of the three forms (6), and two to spare.
	DefaultOperations = 8
	// DefaultTime is the default of Limits.Time.
	DefaultTime = 2 * time.Second
)

// DefaultLimits returns the limits Verify applies: every field at its
// default.
func DefaultLimits() Limits {
	return Limits{
		Signatures: MaxSignatures, KeysPerSignature: DefaultKeysPerSignature,
		Forms: len(Forms()), Operations: DefaultOperations, Time: DefaultTime,
	}
}

// withDefaults returns l with every zero (or negative) field set to its
// default, and Forms at most len(Forms()).
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	return Limits{
		Signatures:       cmp.Or(max(l.Signatures, 0), d.Signatures),
		KeysPerSignature: cmp.Or(max(l.KeysPerSignature, 0), d.KeysPerSignature),
		Forms:            cmp.Or(min(max(l.Forms, 0), d.Forms), d.Forms),
		Operations:       cmp.Or(max(l.Operations, 0), d.Operations),
		Time:             cmp.Or(max(l.Time, 0), d.Time),
	}
}

// operations counts every public-key operation the package performs (each
// JWS.verify call), for tests that check the budget is kept whatever the
// bookkeeping says.
var operations atomic.Int64
