package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Every ratio in the tables is sluice's figure over the other library's:
// in time or heap, below 1× is sluice taking less; in decisions per
// second, above 1× is sluice making more. Each run's ratio is the median
// of its rounds' own ratios (results.ratio); the tables give the median of
// the runs' ratios and, in brackets, the lowest and highest of them.

const base = "sluice"

// The orders the tables list what they find in; what a table finds beyond
// these follows, in the order first seen, and what it does not find it
// leaves out.
var (
	memoryWorks = []string{"hotkey", "hotkey-parallel", "keys-100k-scattered", "keys-100k-ordered",
		"new-keys-100k-scattered", "new-keys-100k-ordered", "first-sight", "keys-100k-parallel"}
	memoryLibs = []string{"sluice", "sluice-store", "xrate", "go-limiter", "throttled", "ulule", "echo"}
	redisLibs  = []string{"sluice", "sluice-unbatched", "floor", "ulule", "redis_rate"}
	httpFws    = []string{"nethttp", "gin", "echo", "echov5", "fiber", "fiberv3"}
	httpLibs   = []string{"bare", "sluice"}
	// httpHarnesses are the HTTP benchmarks, each its own table.
	httpHarnesses = []struct{ bench, title string }{
		{"BenchmarkHTTP", "on one reused request"},
		{"BenchmarkHTTPRecorder", "a fresh httptest.ResponseRecorder per request"},
	}
)

// peer reports whether lib is another library, not sluice, a variant of
// sluice, the bare handler or the Redis floor.
func peer(lib string) bool {
	return lib != base && !strings.HasPrefix(lib, base+"-") && lib != "bare" && lib != "floor"
}

// render returns the markdown of the headline figures and every table,
// with the machine, the commit and the load of each run.
func render(rs runs, skipped []string) string {
	var b strings.Builder
	header(&b, rs, skipped)
	headlines(&b, rs)
	memoryTable(&b, rs)
	heapTable(&b, rs)
	redisTables(&b, rs)
	for _, h := range httpHarnesses {
		httpTable(&b, rs, h.bench, h.title)
	}
	accuracyTable(&b, rs)
	behind(&b, rs)
	return b.String()
}

func header(b *strings.Builder, rs runs, skipped []string) {
	rounds := 0
	for _, r := range rs {
		rounds += r.res.rounds("ns/op")
	}
	fmt.Fprintf(b, "%s, %s in all. A figure is the median over runs of each run's median over its rounds; "+
		"a ratio (×) is sluice's figure over the other library's, the median over runs of each run's median of its rounds' ratios. "+
		"Brackets hold the lowest and the highest of the runs' figures: on every ratio, and on sluice's own figures where they differ.\n\n",
		plural(len(rs), "full run"), plural(rounds, "round"))
	line(b, []string{"run", "started", "commit", "rounds", "load average (1 min) over its rounds"})
	line(b, []string{"---", "---", "---", "---", "---"})
	for _, r := range rs {
		commit := fact(r.machine, "commit")
		if commit == "" { // the older machine.txt: "sluice: commit abc1234"
			commit = strings.TrimPrefix(fact(r.machine, "sluice"), "commit ")
		}
		line(b, []string{r.label, fact(r.machine, "started"), commit,
			strconv.Itoa(r.res.rounds("ns/op")), loadSpan(r.loads)})
	}
	b.WriteString("\n")
	// The facts every run shares once; those that differ, run by run.
	perRun := []string{"started", "commit", "sluice", "load at start"} // in the table above
	var keys []string
	for _, r := range rs {
		for _, m := range r.machine {
			if k, _, ok := strings.Cut(m, ":"); ok && !slices.Contains(keys, k) && !slices.Contains(perRun, k) {
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		var vs []string
		same := true
		for _, r := range rs {
			v := fact(r.machine, k)
			same = same && (len(vs) == 0 || v == vs[0])
			vs = append(vs, v)
		}
		if same {
			fmt.Fprintf(b, "- %s: %s\n", k, vs[0])
			continue
		}
		for i, r := range rs {
			fmt.Fprintf(b, "- %s, %s: %s\n", k, r.label, vs[i])
		}
	}
	for _, s := range skipped {
		fmt.Fprintf(b, "- left out: %s\n", s)
	}
	if len(keys)+len(skipped) > 0 {
		b.WriteString("\n")
	}
}

// fact returns the value of the line "key: value" of machine.txt.
func fact(machine []string, key string) string {
	for _, m := range machine {
		if k, v, ok := strings.Cut(m, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadSpan is the lowest and highest 1-minute load average uptime printed
// before and after the rounds.
func loadSpan(loads []roundLoad) string {
	var vs []float64
	for _, l := range loads {
		for _, s := range []string{l.before, l.after} {
			first, _, _ := strings.Cut(s, ",")
			if v, err := strconv.ParseFloat(strings.TrimSpace(first), 64); err == nil {
				vs = append(vs, v)
			}
		}
	}
	if len(vs) == 0 {
		return ""
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	if lo == hi {
		return strconv.FormatFloat(lo, 'f', 2, 64)
	}
	return strconv.FormatFloat(lo, 'f', 2, 64) + "–" + strconv.FormatFloat(hi, 'f', 2, 64)
}

// best is sluice against the best peer: in each run, the peer whose ratio
// to sluice is the best for the peer, and the median over runs of those
// ratios; who names the best peers and in how many runs each was best.
type best struct {
	ratioAgg
	who string
}

// bestPeer compares sluice, prefix+base, with the best of the peers
// prefix+lib in each run. higherIsBetter says whether more of unit is
// better (decisions/s) or less (time, heap). With overhead set, the figure
// compared is each one's unit less the bare handler's of the same round.
func bestPeer(rs runs, prefix string, libs []string, unit string, higherIsBetter, overhead bool) (best, bool) {
	var out best
	var qs []float64
	wins := map[string]int{}
	var order []string
	for _, r := range rs {
		var top runRatio
		topLib := ""
		for _, lib := range libs {
			if !peer(lib) {
				continue
			}
			var q runRatio
			var ok bool
			if overhead {
				q, ok = r.res.ratioOf(unit, overheadSplit, prefix+base, prefix+lib, prefix+"bare")
			} else {
				q, ok = r.res.ratio(prefix+base, prefix+lib, unit)
			}
			if !ok {
				continue
			}
			// sluice ÷ peer: the best peer in time makes it highest, in
			// decisions per second lowest.
			if topLib == "" || (!higherIsBetter && q.q > top.q) || (higherIsBetter && q.q < top.q) {
				top, topLib = q, lib
			}
		}
		if topLib == "" {
			continue
		}
		qs = append(qs, top.q)
		out.lower += top.lower
		out.rounds += top.rounds
		if wins[topLib] == 0 {
			order = append(order, topLib)
		}
		wins[topLib]++
	}
	a, ok := aggregate(qs)
	if !ok {
		return best{}, false
	}
	out.agg = a
	var who []string
	for _, lib := range order {
		if len(order) == 1 && wins[lib] == len(rs) {
			who = append(who, lib)
			continue
		}
		who = append(who, fmt.Sprintf("%s in %d", lib, wins[lib]))
	}
	out.who = strings.Join(who, ", ")
	return out, true
}

// overheadSplit is (sluice - bare) over (peer - bare) of one round.
func overheadSplit(vs []float64) (float64, float64) { return vs[0] - vs[2], vs[1] - vs[2] }

// headlines writes the figures the README quotes, each with its range,
// the runs it comes from and its harness.
func headlines(b *strings.Builder, rs runs) {
	b.WriteString("### Headline figures\n\n")
	b.WriteString("Median over runs (range across runs; number of runs). Ratios are sluice's figure over the other's.\n\n")
	wrote := false

	const mem = "BenchmarkMemory/"
	libs := rs.values(mem, "lib", memoryLibs)
	var rows [][]string
	for _, w := range rs.values(mem, "work", memoryWorks) {
		prefix := mem + "work=" + w + "/lib="
		bp, ok := bestPeer(rs, prefix, libs, "ns/op", false, false)
		if !ok {
			continue
		}
		s, _ := rs.figure(prefix+base, "ns/op")
		rows = append(rows, []string{w, withRange(s, ns), withRange(bp.agg, times), bp.who, strconv.Itoa(bp.n), "`" + prefix + "…`"})
	}
	if len(rows) > 0 {
		wrote = true
		b.WriteString("In-process, ns per decision:\n\n")
		line(b, []string{"workload", "sluice, ns", "sluice ÷ best peer", "best peer (in runs)", "runs", "harness"})
		line(b, []string{"---", "---", "---", "---", "---", "---"})
		for _, r := range rows {
			line(b, r)
		}
		b.WriteString("\n")
	}

	const heap = "BenchmarkHeapPerKey/"
	if s, ok := rs.figure(heap+"lib="+base, "B/key"); ok {
		wrote = true
		bp, okPeer := bestPeer(rs, heap+"lib=", rs.values(heap, "lib", nil), "B/key", false, false)
		fmt.Fprintf(b, "Heap per key: sluice %s B (%s)", withRange(s, perKey), plural(s.n, "run"))
		if okPeer {
			fmt.Fprintf(b, ", sluice ÷ the smallest peer (%s) %s", bp.who, withRange(bp.agg, times))
		}
		b.WriteString("; from `BenchmarkHeapPerKey`.\n\n")
	}

	const redis = "BenchmarkRedis/"
	rows = nil
	rlibs := rs.values(redis, "lib", redisLibs)
	for _, k := range numeric(rs.values(redis, "keys", nil)) {
		for _, c := range numeric(rs.values(redis, "callers", nil)) {
			prefix := redis + "callers=" + c + "/keys=" + k + "/lib="
			s, ok := rs.figure(prefix+base, "decisions/s")
			if !ok {
				continue
			}
			row := []string{c, k, withRange(s, count), "", "", "", strconv.Itoa(s.n), "`" + prefix + "…`"}
			if f, ok := rs.ratio(prefix+base, prefix+"floor", "decisions/s"); ok {
				row[3] = withRange(f.agg, times)
			}
			if bp, ok := bestPeer(rs, prefix, rlibs, "decisions/s", true, false); ok {
				row[4], row[5] = withRange(bp.agg, times), bp.who
			}
			rows = append(rows, row)
		}
	}
	if len(rows) > 0 {
		wrote = true
		b.WriteString("Redis, decisions per second:\n\n")
		line(b, []string{"callers", "keys", "sluice, decisions/s", "sluice ÷ floor", "sluice ÷ best peer", "best peer (in runs)", "runs", "harness"})
		line(b, []string{"---", "---", "---", "---", "---", "---", "---", "---"})
		for _, r := range rows {
			line(b, r)
		}
		b.WriteString("\n")
	}

	rows = nil
	for _, h := range httpHarnesses {
		bench := h.bench + "/"
		keys := numeric(rs.values(bench, "keys", nil))
		for _, fw := range rs.values(bench, "fw", httpFws) {
			libs := rs.values(bench+"fw="+fw+"/", "lib", httpLibs)
			for _, k := range keys {
				prefix := bench + "fw=" + fw + "/keys=" + k + "/lib="
				o, ok := overheadFigure(rs, prefix+base, prefix+"bare")
				if !ok {
					continue
				}
				row := []string{fw, k, plus(o.med) + withRange(o, ns), "", "", strconv.Itoa(o.n), "`" + prefix + "…`"}
				if bp, ok := bestPeer(rs, prefix, libs, "ns/op", false, true); ok {
					row[3], row[4] = withRange(bp.agg, times), bp.who
				}
				rows = append(rows, row)
			}
		}
	}
	if len(rows) > 0 {
		wrote = true
		b.WriteString("HTTP, the middleware's ns per request over the bare handler's:\n\n")
		line(b, []string{"framework", "keys", "sluice's overhead, ns", "sluice's ÷ best peer's", "best peer (in runs)", "runs", "harness"})
		line(b, []string{"---", "---", "---", "---", "---", "---", "---"})
		for _, r := range rows {
			line(b, r)
		}
		b.WriteString("\n")
	}
	if !wrote {
		b.WriteString("None: no run has the benchmarks they come from.\n\n")
	}
}

// overheadFigure is name's ns/op less bare's: in each run, the median of
// the rounds' differences (of the medians without a shared round).
func overheadFigure(rs runs, name, bare string) (agg, bool) {
	var vs []float64
	for _, r := range rs {
		ds := r.res.paired("ns/op", func(vs []float64) (float64, bool) { return vs[0] - vs[1], true }, name, bare)
		if len(ds) > 0 {
			vs = append(vs, medianOf(ds))
			continue
		}
		v, ok := r.res.median(name, "ns/op")
		bv, okBare := r.res.median(bare, "ns/op")
		if ok && okBare {
			vs = append(vs, v-bv)
		}
	}
	return aggregate(vs)
}

func memoryTable(b *strings.Builder, rs runs) {
	const bench = "BenchmarkMemory/"
	works, libs := rs.values(bench, "work", memoryWorks), rs.values(bench, "lib", memoryLibs)
	if len(works) == 0 {
		return
	}
	b.WriteString("#### In-process decisions (`BenchmarkMemory`), ns per decision · sluice ÷ the library\n\n")
	cols := []string{"workload"}
	for i, lib := range libs {
		cols = append(cols, lib)
		if i == 0 && lib == base {
			cols = append(cols, "sluice ÷ best peer")
		}
	}
	line(b, cols)
	line(b, seps(len(cols)))
	for _, w := range works {
		prefix := bench + "work=" + w + "/lib="
		row := []string{w}
		for i, lib := range libs {
			row = append(row, ratioCell(rs, prefix, lib, "ns/op", ns))
			if i == 0 && lib == base {
				bp, ok := bestPeer(rs, prefix, libs, "ns/op", false, false)
				if ok {
					row = append(row, withRange(bp.agg, times)+", "+bp.who)
				} else {
					row = append(row, "")
				}
			}
		}
		line(b, row)
	}
	row := []string{"allocs/op, by workload"}
	for i, lib := range libs {
		var as []string
		for _, w := range works {
			a, ok := rs.figure(bench+"work="+w+"/lib="+lib, "allocs/op")
			as = append(as, cellOf(a.med, ok, count))
		}
		row = append(row, strings.Join(as, " / "))
		if i == 0 && lib == base {
			row = append(row, "")
		}
	}
	line(b, row)
	b.WriteString("\n")
}

func heapTable(b *strings.Builder, rs runs) {
	const bench = "BenchmarkHeapPerKey/"
	libs := rs.values(bench, "lib", nil)
	if len(libs) == 0 {
		return
	}
	keys, _ := rs.figure(bench+"lib="+libs[0], "keys")
	_, n := rs.sum(bench+"lib="+libs[0], "B/key")
	fmt.Fprintf(b, "#### Heap per key at %s keys (`BenchmarkHeapPerKey`, %s), bytes · sluice ÷ the library\n\n", count(keys.med), plural(n, "fill"))
	line(b, append([]string{""}, libs...))
	line(b, seps(len(libs)+1))
	row := []string{"B/key"}
	for _, lib := range libs {
		row = append(row, ratioCell(rs, bench+"lib=", lib, "B/key", perKey))
	}
	line(b, row)
	b.WriteString("\n")
}

// redisTables writes one table for each number of keys: per number of
// callers and library, every metric BenchmarkRedis reported, a column
// for each that some run has.
func redisTables(b *strings.Builder, rs runs) {
	const bench = "BenchmarkRedis/"
	metrics := []struct{ unit, label string }{
		{"decisions/s", "decisions/s"},
		{"", "sluice ÷ it"},
		{"p50-µs", "p50 µs"},
		{"p90-µs", "p90 µs"},
		{"p99-µs", "p99 µs"},
		{"calls/decision", "script calls per decision"},
		{"redis-µs/decision", "Redis µs per decision"},
		{"allocs/op", "allocs per decision"},
	}
	libs := rs.values(bench, "lib", redisLibs)
	for _, k := range numeric(rs.values(bench, "keys", nil)) {
		callers := numeric(rs.values(bench, "callers", nil))
		var present []int // the metrics some benchmark of this table has
		for i, m := range metrics {
			has := m.unit == ""
			for _, c := range callers {
				for _, lib := range libs {
					has = has || rs.has(bench+"callers="+c+"/keys="+k+"/lib="+lib, m.unit)
				}
			}
			if has {
				present = append(present, i)
			}
		}
		what := k + " keys"
		if v, err := strconv.ParseFloat(k, 64); err == nil {
			what = count(v) + " keys"
		}
		if k == "1" {
			what = "one hot key"
		}
		fmt.Fprintf(b, "#### Redis (`BenchmarkRedis`), %s\n\n", what)
		cols := []string{"callers", "library"}
		for _, i := range present {
			cols = append(cols, metrics[i].label)
		}
		line(b, cols)
		line(b, seps(len(cols)))
		for _, c := range callers {
			prefix := bench + "callers=" + c + "/keys=" + k + "/lib="
			for _, lib := range libs {
				if !rs.has(prefix+lib, "decisions/s") && !rs.has(prefix+lib, "ns/op") {
					continue
				}
				row := []string{c, lib}
				for _, i := range present {
					m := metrics[i]
					switch {
					case m.unit == "" && lib != base:
						q, ok := rs.ratio(prefix+base, prefix+lib, "decisions/s")
						row = append(row, cellOf(0, ok, func(float64) string { return withRange(q.agg, times) }))
					case m.unit == "":
						row = append(row, "")
					case lib == base:
						a, ok := rs.figure(prefix+lib, m.unit)
						row = append(row, cellOf(0, ok, func(float64) string { return figureRange(a, redisFormat(m.unit)) }))
					default:
						a, ok := rs.figure(prefix+lib, m.unit)
						row = append(row, cellOf(a.med, ok, redisFormat(m.unit)))
					}
				}
				line(b, row)
			}
		}
		b.WriteString("\n")
	}
}

func redisFormat(unit string) func(float64) string {
	switch unit {
	case "decisions/s", "allocs/op":
		return count
	case "calls/decision":
		return fraction
	}
	return ns
}

// httpTable writes each limiter's time per request under bench, its
// overhead over the bare handler, and sluice's overhead over its.
func httpTable(b *strings.Builder, rs runs, bench, title string) {
	prefixAll := bench + "/"
	fws, keys := rs.values(prefixAll, "fw", httpFws), numeric(rs.values(prefixAll, "keys", nil))
	if len(fws) == 0 {
		return
	}
	fmt.Fprintf(b, "#### HTTP middleware (`%s`, %s), ns per request, overhead over the bare handler · sluice's overhead ÷ the library's\n\n", bench, title)
	cols := []string{"framework", "limiter"}
	for _, k := range keys {
		cols = append(cols, "keys="+k, "overhead", "allocs")
	}
	line(b, cols)
	line(b, seps(len(cols)))
	for _, fw := range fws {
		for _, lib := range rs.values(prefixAll+"fw="+fw+"/", "lib", httpLibs) {
			row := []string{fw, lib}
			for _, k := range keys {
				prefix := prefixAll + "fw=" + fw + "/keys=" + k + "/lib="
				v, ok := rs.figure(prefix+lib, "ns/op")
				if lib == base {
					row = append(row, cellOf(0, ok, func(float64) string { return figureRange(v, ns) }))
				} else {
					row = append(row, cellOf(v.med, ok, ns))
				}
				o, okO := overheadFigure(rs, prefix+lib, prefix+"bare")
				switch {
				case lib == "bare" || !okO:
					row = append(row, "")
				case lib == base:
					row = append(row, plus(o.med)+figureRange(o, ns))
				default:
					cell := plus(o.med) + ns(o.med)
					if q, ok := rs.ratioOf("ns/op", overheadSplit, prefix+base, prefix+lib, prefix+"bare"); ok {
						cell += " · " + withRange(q.agg, times)
					}
					row = append(row, cell)
				}
				a, ok := rs.figure(prefix+lib, "allocs/op")
				row = append(row, cellOf(a.med, ok, count))
			}
			line(b, row)
		}
	}
	b.WriteString("\n")
}

// accuracyTable writes what each limiter admitted against what the policy
// allows, in bold where it admitted more, and how many attempts failed with
// an error over all rounds of all runs (a limiter reports errors only when
// it has some, so their median would hide the rounds without).
func accuracyTable(b *strings.Builder, rs runs) {
	const bench = "BenchmarkAccuracy/"
	cases, libs := rs.values(bench, "case", nil), rs.values(bench, "lib", nil)
	if len(cases) == 0 {
		return
	}
	// sluice's own variants (its fixed window) last, after the peers.
	slices.SortStableFunc(libs, func(a, b string) int {
		return cmp.Compare(boolInt(strings.HasPrefix(a, base+"-")), boolInt(strings.HasPrefix(b, base+"-")))
	})
	b.WriteString("#### Accuracy (`BenchmarkAccuracy`), admitted / the most the policy allows\n\n")
	line(b, append([]string{""}, cases...))
	line(b, seps(len(cases)+1))
	for _, lib := range libs {
		row := []string{lib}
		for _, c := range cases {
			name := bench + "case=" + c + "/lib=" + lib
			got, ok := rs.figure(name, "admitted")
			most, okMost := rs.figure(name, "policy-max")
			if !ok || !okMost {
				row = append(row, "")
				continue
			}
			s := count(got.med) + " / " + count(most.med)
			if got.med > most.med {
				s = "**" + s + "**"
			}
			if errs, _ := rs.sum(name, "errors"); errs > 0 {
				_, n := rs.sum(name, "admitted")
				s += fmt.Sprintf(", %s failed in %s", count(errs), plural(n, "round"))
			}
			row = append(row, s)
		}
		line(b, row)
	}
	b.WriteString("\n")
}

// behind lists every comparison in which a peer beat sluice in at least
// one run, with the runs and the rounds (of all runs) it was ahead in, so
// that the README cannot claim more than the runs show.
func behind(b *strings.Builder, rs runs) {
	var lost []string
	check := func(what, prefix string, libs []string, unit string, higherIsBetter bool) {
		sv, ok := rs.figure(prefix+base, unit)
		if !ok {
			return
		}
		for _, lib := range libs {
			if !peer(lib) {
				continue
			}
			v, okV := rs.figure(prefix+lib, unit)
			q, okQ := rs.ratio(prefix+base, prefix+lib, unit)
			if !okV || !okQ {
				continue
			}
			// sluice ÷ peer: the peer is ahead in a run whose ratio is
			// above 1 in time or heap, below 1 in decisions per second.
			aheadRuns, aheadRounds := q.n-q.lowerRuns, q.rounds-q.lower
			if higherIsBetter {
				aheadRuns, aheadRounds = q.lowerRuns, q.lower
			}
			if aheadRuns == 0 {
				continue
			}
			l := fmt.Sprintf("%s: %s %s against sluice's %s (sluice ÷ it %s), ahead in %d of %s",
				what, lib, fmtUnit(v.med, unit), fmtUnit(sv.med, unit), withRange(q.agg, times), aheadRuns, plural(q.n, "run"))
			if q.rounds > 0 {
				l += fmt.Sprintf(" and %d of %d rounds", aheadRounds, q.rounds)
			}
			lost = append(lost, l)
		}
	}
	const mem = "BenchmarkMemory/"
	for _, w := range rs.values(mem, "work", memoryWorks) {
		check("memory "+w, mem+"work="+w+"/lib=", rs.values(mem, "lib", memoryLibs), "ns/op", false)
	}
	check("heap per key", "BenchmarkHeapPerKey/lib=", rs.values("BenchmarkHeapPerKey/", "lib", nil), "B/key", false)
	const redis = "BenchmarkRedis/"
	for _, k := range numeric(rs.values(redis, "keys", nil)) {
		for _, c := range numeric(rs.values(redis, "callers", nil)) {
			check("Redis, callers="+c+" keys="+k, redis+"callers="+c+"/keys="+k+"/lib=", rs.values(redis, "lib", redisLibs), "decisions/s", true)
		}
	}
	for _, h := range httpHarnesses {
		bench := h.bench + "/"
		for _, fw := range rs.values(bench, "fw", httpFws) {
			for _, k := range numeric(rs.values(bench, "keys", nil)) {
				check(h.bench+" "+fw+" keys="+k, bench+"fw="+fw+"/keys="+k+"/lib=", rs.values(bench+"fw="+fw+"/", "lib", httpLibs), "ns/op", false)
			}
		}
	}
	b.WriteString("#### Where a peer was faster or smaller than sluice in at least one run\n\n")
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

// ratioCell is sluice's figure with its range, or another library's
// median followed by sluice's ratio to it with the ratio's range.
func ratioCell(rs runs, prefix, lib, unit string, format func(float64) string) string {
	v, ok := rs.figure(prefix+lib, unit)
	if !ok {
		return ""
	}
	if lib == base {
		return figureRange(v, format)
	}
	q, ok := rs.ratio(prefix+base, prefix+lib, unit)
	if !ok {
		return format(v.med)
	}
	return format(v.med) + " · " + withRange(q.agg, times)
}

// withRange is a figure's median and, from more than one run, its range:
// "71.9 (70.2–74.0)".
func withRange(a agg, format func(float64) string) string {
	if a.n < 2 {
		return format(a.med)
	}
	return spanOf(a, format)
}

// figureRange is withRange for the figures of the tables, which leave out a
// range whose ends print as the median does ("0 allocs", not "0 (0–0)"):
// ratios and the headline figures keep theirs.
func figureRange(a agg, format func(float64) string) string {
	if m := format(a.med); a.n < 2 || format(a.lo) == m && format(a.hi) == m {
		return m
	}
	return spanOf(a, format)
}

func spanOf(a agg, format func(float64) string) string {
	lo, hi := strings.TrimSuffix(format(a.lo), "×"), strings.TrimSuffix(format(a.hi), "×")
	return format(a.med) + " (" + lo + "–" + hi + ")"
}

// numeric sorts values that are numbers by their value, the others last.
func numeric(vs []string) []string {
	vs = slices.Clone(vs)
	slices.SortStableFunc(vs, func(a, b string) int {
		x, errA := strconv.ParseFloat(a, 64)
		y, errB := strconv.ParseFloat(b, 64)
		switch {
		case errA != nil || errB != nil:
			return cmp.Compare(boolInt(errA != nil), boolInt(errB != nil))
		}
		return cmp.Compare(x, y)
	})
	return vs
}

// plus is the sign an overhead's figure is written with when it is not
// negative.
func plus(v float64) string {
	if v < 0 {
		return ""
	}
	return "+"
}

func times(q float64) string { return strconv.FormatFloat(q, 'f', 2, 64) + "×" }

func cellOf(v float64, ok bool, format func(float64) string) string {
	if !ok {
		return ""
	}
	return format(v)
}

func seps(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = "---"
	}
	return s
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

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
