// Package jcstest reads the canonicalization vectors under
// detector/jcs/testdata (the A2A TCK's; see its README) for the tests of
// every package that canonicalizes. Each function takes dir, that folder from
// the calling test's package, and fails the test when they cannot be read.
package jcstest
