//go:build !race

package test

// raceEnabled reports whether the tests run with the race detector.
const raceEnabled = false
