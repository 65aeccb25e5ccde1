//go:build race

package sim

// raceEnabled: the race detector slows the simulation tenfold and finds
// nothing in it (a run is one goroutine), so the grid's test skips it.
const raceEnabled = true
