package signature

import (
	"cmp"
	"sync/atomic"
	"time"
)

// Limits bound the work Verify does for one card, whoever wrote it: without
// them 16 ES512 signatures whose kid names 100 keys, over three forms, cost
// 4,800 P-521 verifications (17 s of CPU); a real card needs at most six. A
// signature a limit stops is ReasonOverLimit (ReasonNotChecked past
// Signatures). A zero field takes its default; there is no "unlimited".
type Limits struct {
	// Signatures is how many entries are checked; one ReasonNotChecked
	// Result stands for the rest.
	Signatures int
	// KeysPerSignature is how many keys fitting the alg a kid may name (two
	// while a key is replaced under its old kid).
	KeysPerSignature int
	// Forms is how many distinct canonical forms are tried per key (at most 3).
	Forms int
	// Operations is how many public-key operations the whole card may cost:
	// the bound that holds its cost (an ES512 check is about 3.5 ms).
	Operations int
	// Time is how long checking may take, key lookups (I/O, bounded by whoever
	// does them) excluded: a backstop for what Operations does not count.
	Time time.Duration
}

// Defaults of Limits.
const (
	MaxSignatures           = 16
	DefaultKeysPerSignature = 2
	DefaultOperations       = 8 // a rotation's two signatures over three forms, and two to spare
	DefaultTime             = 2 * time.Second
)

// DefaultLimits returns every field at its default.
func DefaultLimits() Limits {
	return Limits{
		Signatures: MaxSignatures, KeysPerSignature: DefaultKeysPerSignature,
		Forms: len(Forms()), Operations: DefaultOperations, Time: DefaultTime,
	}
}

// withDefaults sets every zero or negative field to its default.
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

// operations counts every public-key operation, for tests that check the
// budget whatever the bookkeeping says.
var operations atomic.Int64
