// Package sluiceslog logs what a sluice Limiter decides with log/slog, at a
// bounded rate.
//
// Under load, a limiter decides thousands of requests a second, and when its
// store fails, every one of them fails: one line per event would bury
// everything else in the log. The observer New returns logs at most a few
// lines per interval for each kind of event (outcome), then one line saying
// how many it suppressed.
//
// By default it logs store failures, lease failures and requests shed (by
// a concurrency limit, or that left a queue unserved) at Warn, and denials
// and changes of a concurrency limit at Debug, and leaves the key out: keys
// are client IPs (personal data in much of the world) or API keys
// (secrets), which a log keeps for longer, and shows to more people, than
// the limiter does. WithKey puts it in. A concurrency limit's events reach
// it through backpressure.Config.Observer, as they reach any core.Observer.
// A change of limit logs the new limit, its cause (core.Event.Cause:
// "queueing", "drops", "grew", "probing", "probed") and the controller's
// baseline when it has one: a limit falling on "queueing" while the
// baseline holds is a spiral starting.
//
// # Levels and the bound
//
// WithLevel(outcome, level) changes or silences an outcome's level, and
// takes a *slog.LevelVar. Each outcome gets at most 5 lines per 10 seconds
// by default (WithLimit). The line after that interval ends says how many
// were suppressed, and it comes with the next event of any kind, so the
// count still shows once the failures stop. Two hundred requests to
// go run ./examples/nethttp -redis 127.0.0.1:1 (nothing listens there) in
// two seconds, then one more ten seconds later, log (less go-redis's own
// lines):
//
//	WARN sluice: store failed policy=per-ip error="sluice: store take: dial tcp 127.0.0.1:1: connect: connection refused" allowed=true decided_by=fallback latency=1.792737ms
//	WARN sluice: store failed policy=per-ip error="sluice: store take: redis: unreachable (the last round trip failed, and Redis has not answered since)" allowed=true decided_by=fallback latency=9.728µs
//	(three more like it)
//	WARN sluice: log lines suppressed outcome=store-failed suppressed=195 interval=10s
//	WARN sluice: store failed policy=per-ip error="sluice: store take: redis: unreachable (the last round trip failed, and Redis has not answered since)" allowed=true decided_by=fallback latency=160.695µs
//
// One line per failed decision was 200 lines in those two seconds.
package sluiceslog
