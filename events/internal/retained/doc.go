// Package retained estimates the bytes a value keeps alive on the heap, for
// caches that are bounded in bytes (events/worker/budget): the value's own size
// plus everything its strings, slices, maps, pointers and interfaces reach,
// each backing array and pointee counted once.
//
// Every block is rounded up to the allocator's size class. It is an
// estimate: shared string bytes count again (an over-estimate, which only
// evicts earlier), a map counts twice its entries (buckets run about half
// empty), and time.Time's location, funcs and channels are not followed.
package retained
