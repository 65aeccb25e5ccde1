//go:build race

package httplimittest

// raceEnabled reports a build with the race detector, which makes
// sync.Pool drop items at random, so that allocation counts vary.
const raceEnabled = true
