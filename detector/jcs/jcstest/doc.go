// Package jcstest reads the canonicalization test vectors kept under
// detector/jcs/testdata (the A2A TCK's a2a-jcs-v01 corpus and its agent-card
// signing payloads; see the README there for their provenance and licence),
// so that the tests of every package that canonicalizes (jcs, signature,
// detector) read them the same way. Each function takes dir, the path of
// that folder from the calling test's package, and fails the test when the
// vectors cannot be read.
package jcstest
