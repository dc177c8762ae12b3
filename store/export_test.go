package store

// WithCacheClock exposes withCacheClock to the external tests.
var WithCacheClock = withCacheClock
