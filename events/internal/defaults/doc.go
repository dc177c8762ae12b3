// Package defaults fills in the defaults of options structs the way every
// package under events/ documents them: a count or duration that is zero or
// negative takes its default, and a nil clock is time.Now.
package defaults
