package store

import (
	"fmt"
	"strings"

	"github.com/carddrift/carddrift/store/internal/kvkey"
)

// DigestKey returns the storage key of a card digest: the hex part of
// "sha256:<64 lowercase hex>". Other forms are ErrInvalidDigest. Every Cards
// implementation validates digests with it.
func DigestKey(digest string) (string, error) {
	hex, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hex) != 64 || !kvkey.IsLowerHex(hex) {
		return "", fmt.Errorf("%w: %s", ErrInvalidDigest, quote(digest))
	}
	return hex, nil
}
