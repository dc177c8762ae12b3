package schemas

// PlainHTTPURL is plainHTTPURL, for TestPlainHTTPURL.
func PlainHTTPURL(s string) bool { return plainHTTPURL(s) }

// FastPatterns are the loops that stand for patterns, by pattern.
var FastPatterns = fastPatterns

// IsURIGeneral is the uri format decided by url.Parse, without the
// shortcut of plainHTTPURL or the cache.
func IsURIGeneral(s string) bool { return parsedURI(s) }

// Tame is tame, for TestTame.
func Tame(lit string) string { return tame(lit) }
