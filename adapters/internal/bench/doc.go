// Package bench measures what each sluice adapter adds to a request over the
// same framework serving the same handler bare, on the allow and the deny
// path, with the memory store. It holds only benchmarks:
//
//	go test -run '^$' -bench BenchmarkOverhead -benchmem ./adapters/internal/bench
//
// Each framework's "bare" case is its own baseline: overhead is allow (or
// deny) minus bare, in ns/op and allocs/op. "noop" is the same framework with
// a pass-through middleware, what merely having a middleware costs there
// (Echo, for one, allocates a closure per middleware per request). The xrate cases are a
// reference point: golang.org/x/time/rate limiters per client IP in a
// sync.Map, as a net/http middleware sending the same IETF fields.
package bench
