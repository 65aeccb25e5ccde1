// Package sluicetest holds what tests of code built on sluice need and
// production code does not:
//
//   - ManualClock, a clock that moves only when told to, on which a store,
//     a core.Limiter and a backpressure.Limiter all decide exactly, with no
//     wall-clock time in the test;
//   - Store, a memory store the test can make fail on demand (Fail,
//     Recover), to see what the application answers while its limiter's
//     store is down, and whose keys it can reset one at a time (ResetKey);
//   - ParseFields, AssertRemaining and AssertRetryAfter, which read a
//     response's RateLimit-Policy and RateLimit fields (the IETF draft's
//     structured lists, every stacked middleware's members) and
//     Retry-After with package fields, the codec the client reads them
//     with, so that a test asserts what the client is told rather than the
//     text of the fields.
package sluicetest
