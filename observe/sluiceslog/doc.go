// Package sluiceslog logs what sluice's limits decide with log/slog, at a
// bounded rate.
//
//	logs, err := sluiceslog.New(slog.Default())
//	...
//	limiter, err := core.NewLimiter(store, core.WithObserver(logs))
//
// The observer New returns logs at most a few lines per interval for each
// outcome (WithLimit: 5 per 10 seconds by default), then one line saying how
// many it suppressed, so that a failing store does not bury the log. By
// default it logs store failures, lease failures and requests shed at Warn,
// denials and changes of a concurrency limit at Debug (WithLevel changes
// them), and leaves the key out, since keys are often personal data or
// secrets (WithKey puts it in).
//
// What each line holds, with an outage's worth of output, is in
// docs/observability.md.
package sluiceslog
