// Package signaturetest makes hostile signed agent cards for tests: the body
// that costs a card-signature verifier the most public-key operations (issue
// 19, row 2), and the key set its signatures name; and SDKNode, the node
// binary that runs the official @a2a-js/sdk from test/interop, which the
// signature tests cross-check canonical forms and signatures with. It does
// not import package signature, so that package's own tests and benchmarks
// can use it.
package signaturetest
