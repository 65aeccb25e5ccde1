package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// roundMarker starts a round in raw.txt: run.sh writes "# round N" before
// each round's results. benchstat ignores the line.
const roundMarker = "# round "

// roundKey says which round a sample came from: the round run.sh marked
// (0 in output without markers) and its place among the samples of the same
// benchmark in that round, so that output without markers pairs the k-th
// sample of one benchmark with the k-th of another, as rounds ran.
type roundKey struct{ round, seq int }

type sample struct {
	at roundKey
	v  float64
}

// results holds every sample of every benchmark of one run, by name.
type results struct {
	names   []string // in the order first seen
	samples map[string]map[string][]sample
}

// parse reads the output of go test -bench, any number of rounds of it.
// Lines that are not benchmark results (headers, PASS, logs) are skipped.
// A benchmark's name keeps its sub-benchmark parts and loses the
// GOMAXPROCS suffix: "BenchmarkMemory/work=hotkey/lib=sluice". Names of
// older harnesses are brought to today's (see normalize).
func parse(r io.Reader) (*results, error) {
	res := &results{samples: map[string]map[string][]sample{}}
	round := 0
	seq := map[string]int{} // samples of a name in the current round
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if n, ok := strings.CutPrefix(text, roundMarker); ok {
			v, err := strconv.Atoi(strings.TrimSpace(n))
			if err != nil {
				return nil, fmt.Errorf("line %d: round %q: %w", line, n, err)
			}
			round = v
			clear(seq)
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			continue // a log line that starts with a benchmark's name
		}
		if len(fields)%2 != 0 {
			return nil, fmt.Errorf("line %d: odd number of value and unit fields: %q", line, text)
		}
		name := normalize(trimProcs(fields[0]))
		metrics := res.samples[name]
		if metrics == nil {
			metrics = map[string][]sample{}
			res.samples[name] = metrics
			res.names = append(res.names, name)
		}
		at := roundKey{round, seq[name]}
		seq[name]++
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q: %w", line, fields[i], err)
			}
			metrics[fields[i+1]] = append(metrics[fields[i+1]], sample{at, v})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// normalize brings a name of an older harness to today's form:
// BenchmarkRedis without a keys= part ran on 100,000 keys.
func normalize(name string) string {
	// BenchmarkMemoryFirstSight is a function of its own (its keys are b.N,
	// not a fixed set) but a workload of the memory table.
	if lib, ok := strings.CutPrefix(name, "BenchmarkMemoryFirstSight/"); ok {
		return "BenchmarkMemory/work=first-sight/" + lib
	}
	if rest, ok := strings.CutPrefix(name, "BenchmarkRedis/"); ok {
		if _, has := part(name, "keys"); !has {
			if c, lib, ok := strings.Cut(rest, "/"); ok {
				return "BenchmarkRedis/" + c + "/keys=100000/" + lib
			}
		}
	}
	return name
}

// trimProcs removes the "-N" GOMAXPROCS suffix go test appends to a name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// median returns the median of name's samples of unit.
func (r *results) median(name, unit string) (float64, bool) {
	ss := r.samples[name][unit]
	if len(ss) == 0 {
		return 0, false
	}
	vs := make([]float64, len(ss))
	for i, s := range ss {
		vs[i] = s.v
	}
	return medianOf(vs), true
}

func medianOf(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// paired returns, for every round in which each of names has a sample of
// unit, f of those samples (in the order of names), in round order.
func (r *results) paired(unit string, f func(vs []float64) (float64, bool), names ...string) []float64 {
	byRound := make([]map[roundKey]float64, len(names))
	for i, n := range names {
		byRound[i] = map[roundKey]float64{}
		for _, s := range r.samples[n][unit] {
			byRound[i][s.at] = s.v
		}
	}
	var keys []roundKey
	for k := range byRound[0] {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b roundKey) int {
		return cmp.Or(cmp.Compare(a.round, b.round), cmp.Compare(a.seq, b.seq))
	})
	var out []float64
	vs := make([]float64, len(names))
	for _, k := range keys {
		all := true
		for i := range names {
			v, ok := byRound[i][k]
			all = all && ok
			vs[i] = v
		}
		if !all {
			continue
		}
		if q, ok := f(vs); ok {
			out = append(out, q)
		}
	}
	return out
}

// runRatio is one run's comparison of two benchmarks.
type runRatio struct {
	q float64 // the median of the rounds' ratios
	// lower is how many of the paired rounds had the numerator below the
	// denominator; rounds is how many rounds were paired (0: none were,
	// and q is the ratio of the medians).
	lower, rounds int
}

// ratio returns name's figure of unit over base's: the median, over the
// rounds in which both ran, of the ratio of their samples of the round.
// Without such a round it falls back to the ratio of the medians.
//
// Two benchmarks of one round ran seconds apart, so the ratio of their
// samples cancels most of what a busy machine adds to both; the median of
// those ratios is steadier than the ratio of two medians taken over rounds
// of different loads.
func (r *results) ratio(name, base, unit string) (runRatio, bool) {
	return r.ratioOf(unit, func(vs []float64) (float64, float64) { return vs[0], vs[1] }, name, base)
}

// ratioOf is ratio of a figure made of several benchmarks' samples: split
// maps the samples of names, in order, to a numerator and a denominator.
func (r *results) ratioOf(unit string, split func(vs []float64) (num, den float64), names ...string) (runRatio, bool) {
	for _, n := range names {
		if len(r.samples[n][unit]) == 0 {
			return runRatio{}, false
		}
	}
	var lower int
	qs := r.paired(unit, func(vs []float64) (float64, bool) {
		num, den := split(vs)
		if den == 0 {
			return 0, false
		}
		if num < den {
			lower++
		}
		return num / den, true
	}, names...)
	if len(qs) > 0 {
		return runRatio{q: medianOf(qs), lower: lower, rounds: len(qs)}, true
	}
	meds := make([]float64, len(names))
	for i, n := range names {
		meds[i], _ = r.median(n, unit)
	}
	num, den := split(meds)
	if den == 0 {
		return runRatio{}, false
	}
	return runRatio{q: num / den}, true
}

// sum returns the sum of name's samples of unit.
func (r *results) sum(name, unit string) float64 {
	var t float64
	for _, s := range r.samples[name][unit] {
		t += s.v
	}
	return t
}

// count returns how many samples of unit name has.
func (r *results) count(name, unit string) int { return len(r.samples[name][unit]) }

// rounds returns how many rounds the run has samples of unit from.
func (r *results) rounds(unit string) int {
	seen := map[roundKey]bool{}
	n := 0
	for _, m := range r.samples {
		for _, s := range m[unit] {
			seen[s.at] = true
		}
		n = max(n, len(m[unit]))
	}
	return max(n, len(seen))
}

// part returns the value of key in a name's "key=value" parts.
func part(name, key string) (string, bool) {
	for p := range strings.SplitSeq(name, "/") {
		if k, v, ok := strings.Cut(p, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
