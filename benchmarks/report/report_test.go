package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bench is one benchmark's line of go test output, with the GOMAXPROCS
// suffix go test appends.
func bench(name string, metrics ...any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s-2 \t 1000", name)
	for i := 0; i < len(metrics); i += 2 {
		fmt.Fprintf(&b, "\t %v %s", metrics[i], metrics[i+1])
	}
	return b.String() + "\n"
}

// rounds joins rounds of output, each after its "# round N" line.
func rounds(rs ...string) string {
	var b strings.Builder
	for i, r := range rs {
		fmt.Fprintf(&b, "%s%d\n%s", roundMarker, i+1, r)
	}
	return b.String()
}

func mem(work, lib string, ns float64) string {
	return bench("BenchmarkMemory/work="+work+"/lib="+lib, ns, "ns/op", 0, "B/op", 0, "allocs/op")
}

func heap(lib string, perKey float64) string {
	return bench("BenchmarkHeapPerKey/lib="+lib, 2000, "ns/op", perKey, "B/key", 1000000, "keys")
}

// Three runs of three rounds. In run A, sluice has an outlier round (900)
// that its median drops. xrate is behind in runs A and B and ahead in run
// C, where it is the best peer. Run C has no heap.
var (
	runA = rounds(
		mem("hotkey", "sluice", 100)+mem("hotkey", "go-limiter", 80)+mem("hotkey", "xrate", 200)+
			heap("sluice", 33.5)+heap("xrate", 217),
		mem("hotkey", "sluice", 110)+mem("hotkey", "go-limiter", 100)+mem("hotkey", "xrate", 220),
		mem("hotkey", "sluice", 900)+mem("hotkey", "go-limiter", 90)+mem("hotkey", "xrate", 180),
	)
	runB = rounds(
		mem("hotkey", "sluice", 120)+mem("hotkey", "go-limiter", 100)+mem("hotkey", "xrate", 250)+
			heap("sluice", 33.8)+heap("xrate", 220),
		mem("hotkey", "sluice", 130)+mem("hotkey", "go-limiter", 100)+mem("hotkey", "xrate", 260),
		mem("hotkey", "sluice", 125)+mem("hotkey", "go-limiter", 100)+mem("hotkey", "xrate", 250),
	)
	runC = rounds(
		mem("hotkey", "sluice", 70)+mem("hotkey", "go-limiter", 100)+mem("hotkey", "xrate", 50),
		mem("hotkey", "sluice", 75)+mem("hotkey", "go-limiter", 100)+mem("hotkey", "xrate", 50),
		mem("hotkey", "sluice", 72)+mem("hotkey", "go-limiter", 100)+mem("hotkey", "xrate", 50),
	)
)

func parseRuns(t *testing.T, raws ...string) runs {
	t.Helper()
	var rs runs
	for i, raw := range raws {
		res, err := parse(strings.NewReader(raw))
		require.NoError(t, err)
		rs = append(rs, &fullRun{label: fmt.Sprintf("run-%d", i+1), res: res})
	}
	return rs
}

func TestFigureIsTheMedianOfTheRunsMedians(t *testing.T) {
	rs := parseRuns(t, runA, runB, runC)
	a, ok := rs.figure("BenchmarkMemory/work=hotkey/lib=sluice", "ns/op")
	require.True(t, ok)
	assert.Equal(t, agg{med: 110, lo: 72, hi: 125, n: 3}, a, "the runs' medians are 110, 125 and 72: run A's 900 is gone")
	_, ok = rs.figure("BenchmarkMemory/work=hotkey/lib=nobody", "ns/op")
	assert.False(t, ok)
}

func TestRatioIsTheMedianOfTheRunsRatios(t *testing.T) {
	rs := parseRuns(t, runA, runB, runC)
	q, ok := rs.ratio("BenchmarkMemory/work=hotkey/lib=sluice", "BenchmarkMemory/work=hotkey/lib=go-limiter", "ns/op")
	require.True(t, ok)
	// Run A's rounds: 1.25, 1.1, 10; run B's: 1.2, 1.3, 1.25; run C's: 0.7, 0.75, 0.72.
	assert.InDelta(t, 1.25, q.med, 1e-9)
	assert.InDelta(t, 0.72, q.lo, 1e-9)
	assert.InDelta(t, 1.25, q.hi, 1e-9)
	assert.Equal(t, 3, q.n)
	assert.Equal(t, 9, q.rounds, "every round of every run")
	assert.Equal(t, 3, q.lower, "sluice took less time in run C's three rounds only")
	assert.Equal(t, 1, q.lowerRuns)
}

func TestARunWithoutABenchmarkCountsOnlyTheRunsWithIt(t *testing.T) {
	rs := parseRuns(t, runA, runB, runC)
	a, ok := rs.figure("BenchmarkHeapPerKey/lib=sluice", "B/key")
	require.True(t, ok)
	assert.Equal(t, 2, a.n)
	assert.InDelta(t, 33.65, a.med, 1e-9)
	md := render(rs, nil)
	assert.Contains(t, md, "Heap per key: sluice 33.6 (33.5–33.8) B (2 runs)")
	assert.Contains(t, md, "(`BenchmarkHeapPerKey`, 2 fills)")
}

func TestBestPeerIsEachRunsBest(t *testing.T) {
	rs := parseRuns(t, runA, runB, runC)
	const prefix = "BenchmarkMemory/work=hotkey/lib="
	bp, ok := bestPeer(rs, prefix, []string{"sluice", "go-limiter", "xrate"}, "ns/op", false, false)
	require.True(t, ok)
	// go-limiter is the best peer in runs A and B (1.25, 1.25), xrate in C
	// (50 ns: 1.44).
	assert.InDelta(t, 1.25, bp.med, 1e-9)
	assert.InDelta(t, 1.25, bp.lo, 1e-9)
	assert.InDelta(t, 1.44, bp.hi, 1e-9)
	assert.Equal(t, "go-limiter in 2, xrate in 1", bp.who)
}

func TestRenderGivesRangesOnRatiosAndSluicesFigures(t *testing.T) {
	md := render(parseRuns(t, runA, runB, runC), nil)
	assert.Contains(t, md, "3 full runs, 9 rounds in all.")
	assert.Contains(t, md, "| hotkey | 110.0 (72.0–125.0) | 1.25× (1.25–1.44) | go-limiter in 2, xrate in 1 | 3 | `BenchmarkMemory/work=hotkey/lib=…` |",
		"the headline row: sluice's figure, its ratio to the best peer, the runs and the harness")
	assert.Contains(t, md, "| workload | sluice | sluice ÷ best peer | xrate | go-limiter |", "libraries in the stated order")
	assert.Contains(t, md, "| hotkey | 110.0 (72.0–125.0) | 1.25× (1.25–1.44), go-limiter in 2, xrate in 1 | 200.0 · 0.50× (0.50–1.44) | 100.0 · 1.25× (0.72–1.25) |")
	assert.Contains(t, md, "| B/key | 33.6 (33.5–33.8) | 218.5 · 0.15× (0.15–0.15) |")
}

func TestBehindCountsEveryRoundOfEveryRun(t *testing.T) {
	md := render(parseRuns(t, runA, runB, runC), nil)
	assert.Contains(t, md, "- memory hotkey: go-limiter 100.0 ns against sluice's 110.0 ns (sluice ÷ it 1.25× (0.72–1.25)), ahead in 2 of 3 runs and 6 of 9 rounds\n")
	assert.Contains(t, md, "- memory hotkey: xrate 200.0 ns against sluice's 110.0 ns (sluice ÷ it 0.50× (0.50–1.44)), ahead in 1 of 3 runs and 4 of 9 rounds\n",
		"behind by the medians, but ahead in run C: listed")
	assert.NotContains(t, md, "heap per key:", "sluice is the smaller in both runs")
}

func TestRoundsPairByTheirMarkers(t *testing.T) {
	res, err := parse(strings.NewReader(rounds(
		"BenchmarkX/lib=sluice-2 1 10 ns/op\nBenchmarkX/lib=a-2 1 20 ns/op\n",
		"BenchmarkX/lib=sluice-2 1 100 ns/op\n", // a failed in round 2
		"BenchmarkX/lib=sluice-2 1 30 ns/op\nBenchmarkX/lib=a-2 1 30 ns/op\n",
	)))
	require.NoError(t, err)
	q, ok := res.ratio("BenchmarkX/lib=sluice", "BenchmarkX/lib=a", "ns/op")
	require.True(t, ok)
	assert.Equal(t, runRatio{q: 0.75, lower: 1, rounds: 2}, q, "rounds 1 and 3: 0.5 and 1; not 100 over 30")
	assert.Equal(t, 3, res.rounds("ns/op"))
}

func TestRoundsWithoutMarkersPairByPosition(t *testing.T) {
	res, err := parse(strings.NewReader("BenchmarkX/lib=sluice-2 1 10 ns/op\nBenchmarkX/lib=a-2 1 20 ns/op\n" +
		"BenchmarkX/lib=sluice-2 1 30 ns/op\nBenchmarkX/lib=a-2 1 30 ns/op\nBenchmarkX/lib=sluice-2 1 50 ns/op\n"))
	require.NoError(t, err)
	q, ok := res.ratio("BenchmarkX/lib=sluice", "BenchmarkX/lib=a", "ns/op")
	require.True(t, ok)
	assert.Equal(t, runRatio{q: 0.75, lower: 1, rounds: 2}, q, "the third sluice sample has no pair")
}

func TestRatioFallsBackToMediansWithoutASharedRound(t *testing.T) {
	res, err := parse(strings.NewReader(rounds("BenchmarkX/lib=sluice-2 1 10 ns/op\n", "BenchmarkX/lib=a-2 1 30 ns/op\nBenchmarkX/lib=sluice-2 1 20 ns/op\n")))
	require.NoError(t, err)
	q, ok := res.ratio("BenchmarkX/lib=a", "BenchmarkX/lib=sluice", "ns/op")
	require.True(t, ok)
	assert.Equal(t, runRatio{q: 1.5, rounds: 1}, q, "paired in round 2 only: 30 over 20, not the medians' 30 over 15")
	res, err = parse(strings.NewReader(rounds("BenchmarkX/lib=sluice-2 1 10 ns/op\nBenchmarkX/lib=sluice-2 1 20 ns/op\n", "BenchmarkX/lib=a-2 1 30 ns/op\n")))
	require.NoError(t, err)
	q, ok = res.ratio("BenchmarkX/lib=a", "BenchmarkX/lib=sluice", "ns/op")
	require.True(t, ok)
	assert.Equal(t, runRatio{q: 2}, q, "no round shared: 30 over the median of 10 and 20")
}

func TestParse(t *testing.T) {
	raw := "goos: linux\npkg: github.com/sluice-go/sluice/benchmarks\n" +
		bench("BenchmarkMemory/work=hotkey/lib=go-limiter", 90, "ns/op") +
		"BenchmarkMemory/work=hotkey/lib=go-limiter logs a line\nPASS\nok  \tgithub.com/sluice-go/sluice/benchmarks\t12.3s\n" +
		bench("BenchmarkRedis/callers=64/lib=sluice", 5000, "ns/op", 0.061, "calls/decision") +
		bench("BenchmarkMemoryFirstSight/lib=sluice", 600, "ns/op")
	res, err := parse(strings.NewReader(raw))
	require.NoError(t, err)
	assert.Equal(t, []string{"BenchmarkMemory/work=hotkey/lib=go-limiter", "BenchmarkRedis/callers=64/keys=100000/lib=sluice",
		"BenchmarkMemory/work=first-sight/lib=sluice"}, res.names,
		"the GOMAXPROCS suffix goes; an older Redis name without keys= ran on 100,000 keys; first sights are a memory workload")
	m, ok := res.median("BenchmarkRedis/callers=64/keys=100000/lib=sluice", "calls/decision")
	require.True(t, ok)
	assert.Equal(t, 0.061, m)
}

func TestParseEvenMedian(t *testing.T) {
	res, err := parse(strings.NewReader("BenchmarkX/lib=a-2 1 10 ns/op\nBenchmarkX/lib=a-2 1 20 ns/op\n"))
	require.NoError(t, err)
	m, _ := res.median("BenchmarkX/lib=a", "ns/op")
	assert.Equal(t, 15.0, m)
}

func TestParseRejectsGarbledValue(t *testing.T) {
	_, err := parse(strings.NewReader("BenchmarkX/lib=a-2 1 ten ns/op\n"))
	assert.ErrorContains(t, err, "line 1")
	_, err = parse(strings.NewReader("# round two\n"))
	assert.ErrorContains(t, err, "line 1")
}

func TestTrimProcs(t *testing.T) {
	assert.Equal(t, "BenchmarkX/lib=go-limiter", trimProcs("BenchmarkX/lib=go-limiter-2"))
	assert.Equal(t, "BenchmarkX/lib=go-limiter", trimProcs("BenchmarkX/lib=go-limiter"), "a name whose last part holds a dash keeps it")
}

func TestNormalize(t *testing.T) {
	assert.Equal(t, "BenchmarkRedis/callers=1/keys=100000/lib=floor", normalize("BenchmarkRedis/callers=1/lib=floor"))
	assert.Equal(t, "BenchmarkRedis/callers=1/keys=1/lib=floor", normalize("BenchmarkRedis/callers=1/keys=1/lib=floor"))
	assert.Equal(t, "BenchmarkHTTP/fw=gin/keys=1/lib=bare", normalize("BenchmarkHTTP/fw=gin/keys=1/lib=bare"))
}

func TestMemoryTableOrdersWorkloadsAndToleratesMissingOnes(t *testing.T) {
	raw := rounds(mem("keys-100k-parallel", "sluice", 190) + mem("keys-100k-parallel", "echo", 1000) +
		mem("new-keys-100k-ordered", "echo", 500) + mem("new-keys-100k-ordered", "sluice", 400) +
		mem("hotkey", "echo", 100) + mem("hotkey", "sluice", 70) + mem("hotkey", "mystery", 60) +
		mem("zeta", "sluice", 1) + mem("zeta", "echo", 2))
	md := render(parseRuns(t, raw), nil)
	table := md[strings.Index(md, "#### In-process"):]
	table = table[:strings.Index(table, "\n\n#")]
	var works []string
	for _, l := range strings.Split(table, "\n")[4:] {
		works = append(works, strings.Fields(l)[1])
	}
	assert.Equal(t, []string{"hotkey", "new-keys-100k-ordered", "keys-100k-parallel", "zeta", "allocs/op,"}, works,
		"the stated order, the old name last of those, then what else appears")
	assert.Contains(t, table, "| workload | sluice | sluice ÷ best peer | echo | mystery |")
	assert.Contains(t, table, "| hotkey | 70.0 | 1.17×, mystery | 100.0 · 0.70× | 60.0 · 1.17× |", "one run: no ranges")
	assert.Contains(t, table, "| new-keys-100k-ordered | 400.0 | 0.80×, echo | 500.0 · 0.80× |  |", "a library missing from a workload: an empty cell")
}

func TestRedisTablesByKeysWithTheMetricsThatAppear(t *testing.T) {
	redis := func(callers, keys, lib string, decisions float64, extra ...any) string {
		name := "BenchmarkRedis/callers=" + callers + "/keys=" + keys + "/lib=" + lib
		if keys == "" {
			name = "BenchmarkRedis/callers=" + callers + "/lib=" + lib
		}
		return bench(name, append([]any{5000, "ns/op", decisions, "decisions/s", 300.0, "p50-µs", 900.0, "p99-µs", 1.0, "calls/decision"}, extra...)...)
	}
	old := rounds(redis("64", "", "sluice", 80000, 2, "allocs/op") + redis("64", "", "floor", 40000, 10, "allocs/op"))
	cur := rounds(
		redis("64", "100000", "sluice", 90000, 500.0, "p90-µs", 8.7, "redis-µs/decision", 2, "allocs/op") +
			redis("64", "100000", "floor", 40000, 600.0, "p90-µs", 2.2, "redis-µs/decision", 10, "allocs/op") +
			redis("64", "100000", "ulule", 30000, 700.0, "p90-µs", 3.0, "redis-µs/decision", 15, "allocs/op") +
			redis("256", "1", "sluice", 120000) + redis("256", "1", "floor", 40000) +
			redis("1", "1", "sluice", 12000) + redis("1", "1", "sluice-unbatched", 11000) + redis("1", "1", "floor", 18000),
	)
	md := render(parseRuns(t, old, cur), nil)
	hot := strings.Index(md, "#### Redis (`BenchmarkRedis`), one hot key")
	many := strings.Index(md, "#### Redis (`BenchmarkRedis`), 100,000 keys")
	require.True(t, hot >= 0 && many > hot, "one table per number of keys, fewest first")
	assert.Contains(t, md, "| callers | library | decisions/s | sluice ÷ it | p50 µs | p99 µs | script calls per decision |\n",
		"the hot key's table has no p90 or server time: no benchmark of it reported them")
	assert.Contains(t, md, "| 1 | sluice | 12,000 |  |")
	assert.Contains(t, md, "| 1 | sluice-unbatched | 11,000 | 1.09× |", "callers in numeric order; sluice's variants before the floor")
	assert.Contains(t, md, "| 256 | floor | 40,000 | 3.00× |")
	assert.Contains(t, md, "| callers | library | decisions/s | sluice ÷ it | p50 µs | p90 µs | p99 µs | script calls per decision | Redis µs per decision | allocs per decision |\n")
	assert.Contains(t, md, "| 64 | sluice | 85,000 (80,000–90,000) |  | 300.0 | 500.0 | 900.0 | 1.000 | 8.70 | 2 |",
		"the older run, without keys=, is the same benchmark at 100,000 keys; p90 and server time from the run that has them; "+
			"a range whose ends print as the median does left out")
	assert.Contains(t, md, "| 64 | floor | 40,000 | 2.12× (2.00–2.25) |")
	assert.Contains(t, md, "| 64 | 100000 | 85,000 (80,000–90,000) | 2.12× (2.00–2.25) | 3.00× | ulule in 1 | 2 | `BenchmarkRedis/callers=64/keys=100000/lib=…` |",
		"headline: sluice ÷ floor, and sluice ÷ the peer that made the most decisions, in the one run that has a peer")
	assert.Contains(t, md, "| 256 | 1 | 120,000 | 3.00× |  |  | 1 |", "no peer but the floor: no best peer")
}

func TestHTTPTablesForEachHarness(t *testing.T) {
	h := func(harness, fw, keys, lib string, ns float64, allocs int) string {
		return bench(harness+"/fw="+fw+"/keys="+keys+"/lib="+lib, ns, "ns/op", 0, "B/op", allocs, "allocs/op")
	}
	raw := rounds(
		h("BenchmarkHTTP", "nethttp", "1", "bare", 50, 0)+h("BenchmarkHTTP", "nethttp", "1", "sluice", 450, 1)+h("BenchmarkHTTP", "nethttp", "1", "ulule", 1250, 13)+
			h("BenchmarkHTTPRecorder", "gin", "1", "bare", 300, 2)+h("BenchmarkHTTPRecorder", "gin", "1", "sluice", 700, 3),
		h("BenchmarkHTTP", "nethttp", "1", "bare", 60, 0)+h("BenchmarkHTTP", "nethttp", "1", "sluice", 460, 1)+h("BenchmarkHTTP", "nethttp", "1", "ulule", 860, 13),
		h("BenchmarkHTTP", "nethttp", "1", "bare", 50, 0)+h("BenchmarkHTTP", "nethttp", "1", "sluice", 550, 1)+h("BenchmarkHTTP", "nethttp", "1", "ulule", 1050, 13),
	)
	md := render(parseRuns(t, raw), nil)
	// Overheads by round: sluice 400, 400, 500; ulule 1200, 800, 1000;
	// their ratios 0.33, 0.5, 0.5.
	assert.Contains(t, md, "| nethttp | sluice | 460.0 | +400.0 | 1 |")
	assert.Contains(t, md, "| nethttp | ulule | 1,050 | +1,000 · 0.50× | 13 |", "the median of the rounds' overheads, and of their ratios")
	assert.Contains(t, md, "| nethttp | 1 | +400.0 | 0.50× | ulule | 1 | `BenchmarkHTTP/fw=nethttp/keys=1/lib=…` |")
	assert.Contains(t, md, "#### HTTP middleware (`BenchmarkHTTPRecorder`, a fresh httptest.ResponseRecorder per request)")
	assert.Contains(t, md, "| gin | sluice | 700.0 | +400.0 | 3 |")
	assert.Contains(t, md, "| gin | 1 | +400.0 |  |  | 1 | `BenchmarkHTTPRecorder/fw=gin/keys=1/lib=…` |")
}

func TestAccuracyTable(t *testing.T) {
	acc := func(c, lib string, admitted, most float64, extra ...any) string {
		return bench("BenchmarkAccuracy/case="+c+"/lib="+lib, append([]any{2000, "ns/op", admitted, "admitted", most, "policy-max"}, extra...)...)
	}
	a := rounds(acc("edge", "sluice", 110, 110)+acc("edge", "sluice-fixed", 199, 110)+acc("edge", "ulule", 199, 110)+acc("edge", "throttled", 110, 110),
		acc("edge", "throttled", 110, 110, 2, "errors"))
	b := rounds(acc("edge", "throttled", 110, 110, 1, "errors"))
	md := render(parseRuns(t, a, b), nil)
	assert.Contains(t, md, "| sluice | 110 / 110 |")
	assert.Contains(t, md, "| ulule | **199 / 110** |\n", "over the policy, in bold")
	assert.Contains(t, md, "| throttled | 110 / 110, 3 failed in 3 rounds |\n| sluice-fixed | **199 / 110** |\n\n",
		"errors summed over every round of every run; sluice's variants last")
}

func TestReplaceSection(t *testing.T) {
	text := []byte("# title\n\n" + beginMarker + "\nold tables\n" + endMarker + "\n\nnotes\n")
	out, err := replaceSection(text, "new tables\n")
	require.NoError(t, err)
	assert.Equal(t, "# title\n\n"+beginMarker+"\nnew tables\n"+endMarker+"\n\nnotes\n", string(out))

	_, err = replaceSection([]byte("no markers"), "x")
	assert.Error(t, err)
}

func write(t *testing.T, path, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
}

func TestRunReadsEveryRunInOrderAndSaysWhichItLeftOut(t *testing.T) {
	dir := t.TempDir()
	machine := func(started, commit, gover string) string {
		return "started: " + started + "\ncommit: " + commit + "\nload at start: 0.5, 0.4, 0.3\ncpu: AMD EPYC\ngo: " + gover + "\n"
	}
	write(t, filepath.Join(dir, "run-1", "raw.txt"), runA)
	write(t, filepath.Join(dir, "run-1", "machine.txt"), machine("2026-12-01 23:00 UTC", "abc1234", "go1.26.8"))
	write(t, filepath.Join(dir, "run-1", "loads.txt"),
		"round 1 before:  03:00:00 up 1 min,  0 users,  load average: 0.50, 0.40, 0.30\n"+
			"round 1 after:  03:01:00 up 2 min,  0 users,  load average: 1.70, 0.50, 0.30\n"+
			"round 2 before:  03:01:00 up 2 min,  0 users,  load average: 1.20, 0.50, 0.30\n")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "run-2"), 0o755)) // a run that never wrote
	write(t, filepath.Join(dir, "run-3", "raw.txt"), "PASS\n")          // a run whose benchmarks all failed
	write(t, filepath.Join(dir, "run-10", "raw.txt"), runB)
	write(t, filepath.Join(dir, "run-10", "machine.txt"), machine("2026-12-02 01:00 UTC", "def5678", "go1.27"))
	write(t, filepath.Join(dir, "run-x", "raw.txt"), runC) // not a run's name
	readme := filepath.Join(dir, "README.md")
	write(t, readme, "intro\n"+beginMarker+"\n"+endMarker+"\n")

	require.NoError(t, run(dir, readme))
	raw, err := os.ReadFile(filepath.Join(dir, "tables.md"))
	require.NoError(t, err)
	tables := string(raw)
	assert.Contains(t, tables, "2 full runs, 6 rounds in all.")
	assert.Contains(t, tables, "| run-1 | 2026-12-01 23:00 UTC | abc1234 | 3 | 0.50–1.70 |\n| run-10 | 2026-12-02 01:00 UTC | def5678 | 3 |  |\n",
		"runs in the order of their numbers, each with its start, commit and load")
	assert.Contains(t, tables, "- cpu: AMD EPYC\n", "a fact the runs share, once")
	assert.Contains(t, tables, "- go, run-1: go1.26.8\n- go, run-10: go1.27\n", "one that differs, run by run")
	assert.Contains(t, tables, "- left out: run-2, which has no raw.txt\n- left out: run-3, which has no benchmark results\n")
	assert.NotContains(t, tables, "load at start")
	assert.Contains(t, tables, "| hotkey | 117.5 (110.0–125.0) |", "runs A and B only")
	text, err := os.ReadFile(readme)
	require.NoError(t, err)
	assert.Equal(t, "intro\n"+beginMarker+"\n"+tables+endMarker+"\n", string(text))
}

func TestRunReadsTheOlderLayoutAsOneRun(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "raw.txt"), mem("keys-100k-parallel", "sluice", 190)+mem("keys-100k-parallel", "go-limiter", 290))
	write(t, filepath.Join(dir, "machine.txt"), "sluice: commit 346ad16\ncommand: ./run.sh -rounds 6, on 2026-12-01 04:59 UTC\n")
	require.NoError(t, run(dir, ""))
	raw, err := os.ReadFile(filepath.Join(dir, "tables.md"))
	require.NoError(t, err)
	assert.Contains(t, string(raw), "| run-1 |  | 346ad16 | 1 |  |")
	assert.Contains(t, string(raw), "| keys-100k-parallel | 190.0 | 0.66×, go-limiter | 290.0 · 0.66× |")

	write(t, filepath.Join(dir, "raw.txt"), "PASS\n")
	assert.ErrorContains(t, run(dir, ""), "no benchmark results")
	empty := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(empty, "run-1"), 0o755))
	assert.ErrorContains(t, run(empty, ""), "no run has benchmark results")
}

func TestWithRange(t *testing.T) {
	assert.Equal(t, "71.9 (70.2–74.0)", withRange(agg{med: 71.9, lo: 70.2, hi: 74, n: 3}, ns))
	assert.Equal(t, "0.76× (0.71–0.80)", withRange(agg{med: 0.76, lo: 0.71, hi: 0.80, n: 3}, times))
	assert.Equal(t, "0.76×", withRange(agg{med: 0.76, lo: 0.76, hi: 0.76, n: 1}, times), "one run has no range")
	assert.Equal(t, "0.15× (0.15–0.15)", withRange(agg{med: 0.152, lo: 0.151, hi: 0.153, n: 3}, times), "a ratio keeps its range")
	assert.Equal(t, "2", figureRange(agg{med: 2, lo: 2, hi: 2, n: 3}, count), "a table's figure whose runs agree")
	assert.Equal(t, "2 (2–3)", figureRange(agg{med: 2, lo: 2, hi: 3, n: 3}, count))
}
