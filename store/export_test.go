package store

import "time"

// WithCacheClock sets the clock of WithCacheMaxAge.
func WithCacheClock(now func() time.Time) CacheOption {
	return func(o *cacheOptions) { o.now = now }
}
