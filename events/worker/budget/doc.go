// Package budget is carddrift's memory budget: one number of bytes
// (carddrift serve --memory-budget, CARDDRIFT_MEMORY_BUDGET) that bounds what
// a serve process keeps in memory for the events it is given, split across
// its caches in fixed shares.
//
// Bytes is the budget as a flag.Value: it reads a size as an operator
// writes it ("256MiB", "1Gi", "1048576") with store.ParseSize, so every size
// flag of carddrift means the same by the same unit; Split divides a total
// into Shares:
//
//	Pins        25%  the pin cache (store.CachedPins, WithCacheBytes)
//	Cards       20%  the worker's parsed pinned cards (worker.Options.CardCacheBytes),
//	                 and a sixteenth of it the worker's diff memo (DiffMemoOption)
//	LiveCards   10%  the fetcher's parsed live cards (fetcher.Options.CacheBytes,
//	                 which counts body bytes: given half the share), and an
//	                 eighth of it the fetcher's copy of the leases (LeaseCopyOption)
//	Pull        20%  lifecycle events held: half in the consumers' pull buffers,
//	                 across partitions (worker.Options.PullBufferBytes), half
//	                 handed on and not yet finished (worker.Options.InflightBytes)
//	Signatures  25%  the signature-result cache of the fetcher
//
// Each cache evicts by the bytes its entries retain, estimated from their
// content (the strings, slices and maps they reach, each allocation rounded
// up to the allocator's size class) plus a fixed overhead per entry; see the
// caches for the estimate. What the budget does not cover is the program
// itself, the NATS connection's own buffers, and the fetches and handlers
// running at the moment (bounded by the fetch body limit and the worker's
// concurrency).
package budget
