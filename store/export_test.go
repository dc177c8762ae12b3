package store

import "time"

// WithCacheClock sets the clock of WithCacheMaxAge.
func WithCacheClock(now func() time.Time) CacheOption {
	return func(o *cacheOptions) { o.now = now }
}

// Live reports whether the watch is live and cached pins are served.
func (c *CachedPins[T]) Live() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}
