// Package benchmarks measures sluice against the rate limiters a Go user
// would pick instead, on the same policy and the same workloads, in one run.
//
// It is a module of its own, so that the peers it imports never enter the
// dependencies of sluice itself. Everything is in test files: the benchmarks
// (BenchmarkMemory, BenchmarkHeapPerKey, BenchmarkRedis, BenchmarkHTTP,
// BenchmarkAccuracy) and the tests that hold every contender to the shared
// policy, so that a misconfigured peer cannot skew a table. run.sh runs the
// benchmarks in interleaved rounds and writes the tables of README.md; the
// report command beside this file turns its output into those tables.
package benchmarks
