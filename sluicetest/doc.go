// Package sluicetest holds what tests of code built on sluice need and
// production code does not: a ManualClock that moves only when told to, on
// which a store, a core.Limiter and a backpressure.Limiter all decide
// exactly, with no wall-clock time in the test.
package sluicetest
