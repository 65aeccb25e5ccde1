package main

import (
	"slices"
	"strings"
)

// fullRun is one full run of run.sh: its rounds' results, the load around each
// round and the facts of the machine and the commit it ran on.
type fullRun struct {
	label   string // "run-1"
	res     *results
	loads   []roundLoad
	machine []string
}

// runs are the full runs a report aggregates, in order.
type runs []*fullRun

// agg is a figure over runs: the median, over the runs that have it, of
// each run's own figure, with the lowest and the highest of those, and
// how many runs had it.
type agg struct {
	med, lo, hi float64
	n           int
}

func aggregate(vs []float64) (agg, bool) {
	if len(vs) == 0 {
		return agg{}, false
	}
	return agg{med: medianOf(vs), lo: slices.Min(vs), hi: slices.Max(vs), n: len(vs)}, true
}

// figure is name's unit over runs: the median over runs of each run's
// median over its rounds.
func (rs runs) figure(name, unit string) (agg, bool) {
	var vs []float64
	for _, r := range rs {
		if v, ok := r.res.median(name, unit); ok {
			vs = append(vs, v)
		}
	}
	return aggregate(vs)
}

// ratioAgg is a ratio over runs, with the rounds it was paired in.
type ratioAgg struct {
	agg
	// lower counts, over all rounds of all runs, the rounds in which the
	// numerator was below the denominator, of paired rounds.
	lower, rounds int
	// lowerRuns counts the runs whose ratio was below 1.
	lowerRuns int
}

// ratio is name's unit over base's: the median over runs of each run's
// median ratio (results.ratio).
func (rs runs) ratio(name, base, unit string) (ratioAgg, bool) {
	return rs.ratioOf(unit, func(vs []float64) (float64, float64) { return vs[0], vs[1] }, name, base)
}

// ratioOf is ratio of a figure made of several benchmarks (results.ratioOf).
func (rs runs) ratioOf(unit string, split func(vs []float64) (num, den float64), names ...string) (ratioAgg, bool) {
	var out ratioAgg
	var qs []float64
	for _, r := range rs {
		q, ok := r.res.ratioOf(unit, split, names...)
		if !ok {
			continue
		}
		qs = append(qs, q.q)
		out.lower += q.lower
		out.rounds += q.rounds
		if q.q < 1 {
			out.lowerRuns++
		}
	}
	a, ok := aggregate(qs)
	out.agg = a
	return out, ok
}

// values returns the values the part key takes in the names, of any run,
// that start with prefix: first those of order that appear, in that order,
// then the others in the order first seen. values("BenchmarkMemory/",
// "lib", nil).
func (rs runs) values(prefix, key string, order []string) []string {
	var seen []string
	for _, r := range rs {
		for _, name := range r.res.names {
			if !strings.HasPrefix(name, prefix) {
				continue
			}
			if v, ok := part(name, key); ok && !slices.Contains(seen, v) {
				seen = append(seen, v)
			}
		}
	}
	var vs []string
	for _, v := range order {
		if slices.Contains(seen, v) {
			vs = append(vs, v)
		}
	}
	for _, v := range seen {
		if !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	return vs
}

// has reports whether any run has a sample of unit for name.
func (rs runs) has(name, unit string) bool {
	for _, r := range rs {
		if r.res.count(name, unit) > 0 {
			return true
		}
	}
	return false
}

// sum returns the sum of name's samples of unit over every round of every
// run, and how many samples there were.
func (rs runs) sum(name, unit string) (float64, int) {
	var t float64
	var n int
	for _, r := range rs {
		t += r.res.sum(name, unit)
		n += r.res.count(name, unit)
	}
	return t, n
}
