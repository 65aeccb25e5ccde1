// Package adapters measures what each sluice adapter adds to a request over
// the same framework serving the same handler bare, on the allow and the
// deny path, with the memory store. It holds only benchmarks:
//
//	cd benchmarks && go test -run '^$' -bench BenchmarkOverhead -benchmem ./adapters
//
// Each framework's "bare" case is its own baseline: overhead is allow (or
// deny) minus bare, in ns/op and allocs/op. "noop" is the same framework with
// a pass-through middleware, what merely having a middleware costs there
// (Echo, for one, allocates a closure per middleware per request).
package adapters
