package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The tables compare every library with sluice, the first library of each
// benchmark: a ratio is the median over rounds of the library's figure over
// sluice's in the same round (see results.ratio), so that a time above 1× is
// slower than sluice and a rate above 1× is faster.

const base = "sluice"

// render returns the markdown of every table, with the machine and the
// load of each round.
func render(r *results, loads []roundLoad, machine []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d interleaved rounds.\n\n", r.rounds("ns/op"))
	for _, m := range machine {
		fmt.Fprintf(&b, "- %s\n", m)
	}
	if len(loads) > 0 {
		b.WriteString("- load averages (1, 5, 15 min) before and after each round:")
		for _, l := range loads {
			fmt.Fprintf(&b, " %d: %s → %s;", l.round, l.before, l.after)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	memoryTable(&b, r)
	heapTable(&b, r)
	redisTable(&b, r)
	httpTables(&b, r)
	accuracyTable(&b, r)
	behind(&b, r)
	return b.String()
}

func memoryTable(b *strings.Builder, r *results) {
	const bench = "BenchmarkMemory/"
	works, libs := r.values(bench, "work"), r.values(bench, "lib")
	if len(works) == 0 {
		return
	}
	b.WriteString("#### In-process decisions (`BenchmarkMemory`), ns per decision\n\n")
	header(b, "workload", libs)
	for _, w := range works {
		row := []string{w}
		for _, lib := range libs {
			row = append(row, ratioCell(r, bench+"work="+w+"/lib=", lib, "ns/op", ns))
		}
		line(b, row)
	}
	row := []string{"allocs/op"}
	for _, lib := range libs {
		var as []string
		for _, w := range works {
			v, ok := r.median(bench+"work="+w+"/lib="+lib, "allocs/op")
			as = append(as, cell(v, ok, count))
		}
		row = append(row, strings.Join(as, " / "))
	}
	line(b, row)
	b.WriteString("\n")
}

func heapTable(b *strings.Builder, r *results) {
	const bench = "BenchmarkHeapPerKey/"
	libs := r.values(bench, "lib")
	if len(libs) == 0 {
		return
	}
	keys, _ := r.median(bench+"lib="+libs[0], "keys")
	fmt.Fprintf(b, "#### Heap per key at %s keys (`BenchmarkHeapPerKey`, %s), bytes\n\n", count(keys), fills(r.rounds("B/key")))
	header(b, "", libs)
	row := []string{"B/key"}
	for _, lib := range libs {
		row = append(row, ratioCell(r, bench+"lib=", lib, "B/key", perKey))
	}
	line(b, row)
	b.WriteString("\n")
}

func redisTable(b *strings.Builder, r *results) {
	const bench = "BenchmarkRedis/"
	callers, libs := r.values(bench, "callers"), r.values(bench, "lib")
	if len(callers) == 0 {
		return
	}
	b.WriteString("#### Redis (`BenchmarkRedis`), 100k keys\n\n")
	header(b, "", libs)
	for _, c := range callers {
		prefix := bench + "callers=" + c + "/lib="
		who := c + " callers"
		if c == "1" {
			who = "1 caller"
		}
		rows := []struct {
			label, unit string
			format      func(float64) string
			ratio       bool
		}{
			{"decisions/s, " + who, "decisions/s", count, true},
			{"p50 µs, " + who, "p50-µs", ns, false},
			{"p99 µs, " + who, "p99-µs", ns, false},
			{"script calls per decision, " + who, "calls/decision", fraction, false},
			{"allocs per decision, " + who, "allocs/op", count, false},
		}
		for _, m := range rows {
			row := []string{m.label}
			for _, lib := range libs {
				if m.ratio {
					row = append(row, ratioCell(r, prefix, lib, m.unit, m.format))
					continue
				}
				v, ok := r.median(prefix+lib, m.unit)
				row = append(row, cell(v, ok, m.format))
			}
			line(b, row)
		}
	}
	b.WriteString("\n")
}

// httpTables writes one table per framework: each limiter's time per
// request and its overhead over the bare handler, hot key and 100k keys.
// The ratio is the overhead's over sluice's.
func httpTables(b *strings.Builder, r *results) {
	const bench = "BenchmarkHTTP/"
	fws, keys := r.values(bench, "fw"), r.values(bench, "keys")
	if len(fws) == 0 {
		return
	}
	b.WriteString("#### HTTP middleware (`BenchmarkHTTP`), ns per request and overhead over the bare handler\n\n")
	cols := []string{"framework", "limiter"}
	for _, k := range keys {
		cols = append(cols, "keys="+k, "overhead", "allocs")
	}
	line(b, cols)
	line(b, strings.Split(strings.Repeat("---,", len(cols)-1)+"---", ","))
	for _, fw := range fws {
		prefix := bench + "fw=" + fw + "/keys="
		for _, lib := range r.values(bench+"fw="+fw+"/", "lib") {
			row := []string{fw, lib}
			for _, k := range keys {
				name := prefix + k + "/lib="
				v, ok := r.median(name+lib, "ns/op")
				row = append(row, cell(v, ok, ns))
				bare, okBare := r.median(name+"bare", "ns/op")
				sl, okBase := r.median(name+base, "ns/op")
				switch {
				case lib == "bare" || !ok || !okBare:
					row = append(row, "")
				case lib == base || !okBase:
					row = append(row, "+"+ns(v-bare))
				default:
					row = append(row, "+"+ns(v-bare)+" ("+ratio(v-bare, sl-bare)+")")
				}
				a, ok := r.median(name+lib, "allocs/op")
				row = append(row, cell(a, ok, count))
			}
			line(b, row)
		}
	}
	b.WriteString("\n")
}

// accuracyTable writes what each limiter admitted against what the policy
// allows, in bold where it admitted more, and how many attempts failed with
// an error over all rounds (a limiter reports errors only when it has some,
// so their median would hide the rounds without).
func accuracyTable(b *strings.Builder, r *results) {
	const bench = "BenchmarkAccuracy/"
	cases, libs := r.values(bench, "case"), r.values(bench, "lib")
	if len(cases) == 0 {
		return
	}
	// sluice's own variants (its fixed window) last, after the peers.
	slices.SortStableFunc(libs, func(a, b string) int {
		return cmp.Compare(boolInt(strings.HasPrefix(a, base+"-")), boolInt(strings.HasPrefix(b, base+"-")))
	})
	b.WriteString("#### Accuracy (`BenchmarkAccuracy`), admitted / the most the policy allows\n\n")
	header(b, "", cases)
	for _, lib := range libs {
		row := []string{lib}
		for _, c := range cases {
			name := bench + "case=" + c + "/lib=" + lib
			got, ok := r.median(name, "admitted")
			most, okMost := r.median(name, "policy-max")
			if !ok || !okMost {
				row = append(row, "")
				continue
			}
			s := count(got) + " / " + count(most)
			if got > most {
				s = "**" + s + "**"
			}
			if errs := r.sum(name, "errors"); errs > 0 {
				s += fmt.Sprintf(", %s failed in %d rounds", count(errs), len(r.samples[name]["admitted"]))
			}
			row = append(row, s)
		}
		line(b, row)
	}
	b.WriteString("\n")
}

// behind lists every workload where a peer beat sluice, by the medians of
// the figures or by the median of the rounds' ratios, with the number of
// rounds it was ahead in, so that the README cannot claim more than the run
// shows.
func behind(b *strings.Builder, r *results) {
	var lost []string
	check := func(what, prefix string, libs []string, unit string, higherIsBetter bool) {
		sv, ok := r.median(prefix+base, unit)
		if !ok {
			return
		}
		for _, lib := range libs {
			if lib == base || strings.HasPrefix(lib, base+"-") || lib == "bare" || lib == "floor" {
				continue
			}
			v, ok := r.median(prefix+lib, unit)
			if !ok {
				continue
			}
			q, lower, rounds, _ := r.ratio(prefix+lib, prefix+base, unit)
			better := lower // rounds in which lib beat sluice
			if higherIsBetter && rounds > 0 {
				better = rounds - lower
			}
			ahead := higherIsBetter && (v > sv || q > 1) || !higherIsBetter && (v < sv || q < 1)
			if !ahead {
				continue
			}
			l := fmt.Sprintf("%s: %s %s against sluice's %s (%s)", what, lib, fmtUnit(v, unit), fmtUnit(sv, unit), times(q))
			if rounds > 0 {
				l += fmt.Sprintf(", ahead in %d of %d rounds", better, rounds)
			}
			lost = append(lost, l)
		}
	}
	for _, w := range r.values("BenchmarkMemory/", "work") {
		check("memory "+w, "BenchmarkMemory/work="+w+"/lib=", r.values("BenchmarkMemory/", "lib"), "ns/op", false)
	}
	check("heap per key", "BenchmarkHeapPerKey/lib=", r.values("BenchmarkHeapPerKey/", "lib"), "B/key", false)
	for _, c := range r.values("BenchmarkRedis/", "callers") {
		check("Redis, callers="+c, "BenchmarkRedis/callers="+c+"/lib=", r.values("BenchmarkRedis/", "lib"), "decisions/s", true)
	}
	for _, fw := range r.values("BenchmarkHTTP/", "fw") {
		for _, k := range r.values("BenchmarkHTTP/", "keys") {
			check("HTTP "+fw+" keys="+k, "BenchmarkHTTP/fw="+fw+"/keys="+k+"/lib=", r.values("BenchmarkHTTP/fw="+fw+"/", "lib"), "ns/op", false)
		}
	}
	b.WriteString("#### Where a peer was faster or smaller than sluice in this run\n\n")
	if len(lost) == 0 {
		b.WriteString("Nowhere.\n")
		return
	}
	for _, l := range lost {
		fmt.Fprintf(b, "- %s\n", l)
	}
}

func fmtUnit(v float64, unit string) string {
	switch unit {
	case "ns/op":
		return ns(v) + " ns"
	case "B/key":
		return perKey(v) + " B/key"
	case "decisions/s":
		return count(v) + "/s"
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + unit
}

// ratioCell is a library's median, with its ratio to sluice's unless it is
// sluice.
func ratioCell(r *results, prefix, lib, unit string, format func(float64) string) string {
	v, ok := r.median(prefix+lib, unit)
	if !ok {
		return ""
	}
	if lib == base {
		return format(v)
	}
	q, _, _, ok := r.ratio(prefix+lib, prefix+base, unit)
	if !ok {
		return format(v)
	}
	return format(v) + " (" + times(q) + ")"
}

func times(q float64) string { return strconv.FormatFloat(q, 'f', 2, 64) + "×" }

func ratio(v, of float64) string {
	if of == 0 {
		return "–"
	}
	return times(v / of)
}

func cell(v float64, ok bool, format func(float64) string) string {
	if !ok {
		return ""
	}
	return format(v)
}

func header(b *strings.Builder, first string, cols []string) {
	line(b, append([]string{first}, cols...))
	seps := make([]string, len(cols)+1)
	for i := range seps {
		seps[i] = "---"
	}
	line(b, seps)
}

func line(b *strings.Builder, cells []string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

// ns formats a time: three significant digits below 1,000, whole units
// with thousands separators above.
func ns(v float64) string {
	switch a := math.Abs(v); {
	case a < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return count(v)
}

func perKey(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func fraction(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// count formats a whole number with thousands separators.
func count(v float64) string {
	n := int64(math.Round(v))
	s := strconv.FormatInt(max(n, -n), 10)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if n < 0 {
		return "-" + string(out)
	}
	return string(out)
}

func fills(n int) string {
	if n == 1 {
		return "one fill"
	}
	return "median of " + strconv.Itoa(n) + " fills"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
