// Package signaturetest makes hostile signed agent cards for tests: the body
// that costs a card-signature verifier the most public-key operations (issue
// 19, row 2), and the key set its signatures name. It does not import package
// signature, so that package's own tests and benchmarks can use it.
package signaturetest
