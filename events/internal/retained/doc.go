// Package retained estimates the bytes a value keeps alive on the heap, for
// caches that are bounded in bytes (events/worker/budget): the value's own size
// plus everything its strings, slices, maps, pointers and interfaces reach,
// each backing array and pointee counted once.
//
// Every separately allocated block (a string's bytes, a backing array, a
// pointee) is rounded up to the allocator's size class, as the heap holds
// it. It is an estimate, not a measurement: a string's bytes count even when it
// shares memory with another (an over-estimate, which only evicts earlier),
// a map counts twice its entries' size (Go's buckets run at most about
// half empty past their growth), and time.Time's location, funcs and
// channels are not followed (shared or not data). Values of any size take
// time linear in what they reach.
package retained
