//go:build !race

package httplimittest

const raceEnabled = false
