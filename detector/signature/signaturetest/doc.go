// Package signaturetest makes hostile signed agent cards for tests (the body
// that costs a verifier the most public-key operations, and its key set), and
// finds the node that runs @a2a-js/sdk (SDKNode) to cross-check with. It does
// not import package signature, so that package's own tests can use it.
package signaturetest
