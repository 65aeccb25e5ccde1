package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// results holds every sample of every benchmark of a run, by name.
type results struct {
	names   []string // in the order first seen
	samples map[string]map[string][]float64
}

// parse reads the output of go test -bench, any number of rounds of it.
// Lines that are not benchmark results (headers, PASS, logs) are skipped.
// A benchmark's name keeps its sub-benchmark parts and loses the
// GOMAXPROCS suffix: "BenchmarkMemory/work=hotkey/lib=sluice".
func parse(r io.Reader) (*results, error) {
	res := &results{samples: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			continue // a log line that starts with a benchmark's name
		}
		if len(fields)%2 != 0 {
			return nil, fmt.Errorf("line %d: odd number of value and unit fields: %q", line, sc.Text())
		}
		name := trimProcs(fields[0])
		metrics := res.samples[name]
		if metrics == nil {
			metrics = map[string][]float64{}
			res.samples[name] = metrics
			res.names = append(res.names, name)
		}
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q: %w", line, fields[i], err)
			}
			metrics[fields[i+1]] = append(metrics[fields[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return res, nil
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

// median returns the median of the samples of unit for name.
func (r *results) median(name, unit string) (float64, bool) {
	vs := r.samples[name][unit]
	if len(vs) == 0 {
		return 0, false
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

// ratio returns the median, over rounds, of name's sample of unit over
// base's sample of the same round, and in how many rounds name's sample was
// the lower. Samples are paired by position, which is the round as long as
// both benchmarks ran in every round; otherwise ratio falls back to the
// ratio of the medians, with lower -1.
//
// Two benchmarks of one round ran seconds apart, so the ratio of their
// samples cancels most of what a busy machine adds to both; the median of
// those ratios is steadier than the ratio of two medians taken over rounds
// of different loads.
func (r *results) ratio(name, base, unit string) (median float64, lower, rounds int, ok bool) {
	vs, bs := r.samples[name][unit], r.samples[base][unit]
	if len(vs) == 0 || len(bs) == 0 {
		return 0, 0, 0, false
	}
	if len(vs) != len(bs) {
		v, _ := r.median(name, unit)
		b, _ := r.median(base, unit)
		if b == 0 {
			return 0, 0, 0, false
		}
		return v / b, -1, 0, true
	}
	ratios := make([]float64, 0, len(vs))
	for i, v := range vs {
		if bs[i] == 0 {
			return 0, 0, 0, false
		}
		ratios = append(ratios, v/bs[i])
		if v < bs[i] {
			lower++
		}
	}
	return medianOf(ratios), lower, len(vs), true
}

// sum returns the sum of the samples of unit for name.
func (r *results) sum(name, unit string) float64 {
	var t float64
	for _, v := range r.samples[name][unit] {
		t += v
	}
	return t
}

// rounds returns the most samples any benchmark has of unit.
func (r *results) rounds(unit string) int {
	n := 0
	for _, m := range r.samples {
		n = max(n, len(m[unit]))
	}
	return n
}

// values returns, in the order first seen, the values the part key takes
// in the names that start with prefix: values("BenchmarkMemory/", "lib").
func (r *results) values(prefix, key string) []string {
	var vs []string
	for _, name := range r.names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if v, ok := part(name, key); ok && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	return vs
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
