package detector

import (
	"fmt"
	"strings"

	"github.com/carddrift/carddrift/detector/jcs"
)

// Sentinel errors returned by Parse, inside a *SyntaxError: those of package
// jcs, which does the parsing (see jcs.ErrNotJSON and the others for when).
var (
	ErrNotJSON      = jcs.ErrNotJSON
	ErrNotObject    = jcs.ErrNotObject
	ErrDuplicateKey = jcs.ErrDuplicateKey
	ErrInvalidUTF8  = jcs.ErrInvalidUTF8
	ErrTooLarge     = jcs.ErrTooLarge
	ErrTooDeep      = jcs.ErrTooDeep
)

// SupportedVersions are the protocol version lines carddrift knows the
// schemas of. Cards and interfaces at other versions are read all the same.
var SupportedVersions = []string{"0.1", "0.2", "0.3", "1.0"}

// SyntaxError locates a JSON problem. Err is one of ErrNotJSON, ErrNotObject,
// ErrDuplicateKey, ErrInvalidUTF8, ErrTooLarge or ErrTooDeep. It is
// jcs.SyntaxError, so errors.As matches it whichever name the caller uses.
type SyntaxError = jcs.SyntaxError

// ValueError reports a bad enumerated value passed by a caller.
type ValueError struct {
	Field   string
	Value   string
	Allowed []string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("invalid %s %q (allowed: %s)", e.Field, e.Value, strings.Join(e.Allowed, ", "))
}
