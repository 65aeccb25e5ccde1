package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// raw is three rounds of a few benchmarks, with the noise go test prints
// around them.
const raw = `goos: linux
goarch: amd64
pkg: github.com/sluice-go/sluice/benchmarks
cpu: AMD EPYC
BenchmarkMemory/work=hotkey/lib=sluice-2         	  300000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMemory/work=hotkey/lib=xrate-2          	  300000	       150.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMemory/work=hotkey/lib=go-limiter-2     	  300000	        90.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkHTTP/fw=nethttp/keys=1/lib=bare-2         	  100000	        50.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkHTTP/fw=nethttp/keys=1/lib=sluice-2       	  100000	       450.0 ns/op	     104 B/op	       1 allocs/op
BenchmarkHTTP/fw=nethttp/keys=1/lib=ulule-2        	  100000	      1250 ns/op	     240 B/op	      13 allocs/op
BenchmarkRedis/callers=64/lib=sluice-2 	 20000	 5000 ns/op	 200000 decisions/s	 300.0 p50-µs	 900.0 p99-µs	 0.0610 calls/decision	 400 B/op	 2 allocs/op
BenchmarkRedis/callers=64/lib=redis_rate-2 	 20000	 13000 ns/op	 75000 decisions/s	 700.0 p50-µs	 2900 p99-µs	 1.000 calls/decision	 1600 B/op	 22 allocs/op
BenchmarkAccuracy/case=edge/lib=sluice-2 	 1	 2000 ns/op	 110.0 admitted	 110.0 policy-max
BenchmarkHeapPerKey/lib=sluice-2 	 1	 2000 ns/op	 50.50 B/key	 1000000 keys
BenchmarkHeapPerKey/lib=xrate-2 	 1	 2000 ns/op	 217.6 B/key	 1000000 keys
BenchmarkAccuracy/case=edge/lib=sluice-fixed-2 	 1	 2000 ns/op	 199.0 admitted	 110.0 policy-max
BenchmarkAccuracy/case=edge/lib=ulule-2 	 1	 2000 ns/op	 199.0 admitted	 110.0 policy-max
BenchmarkAccuracy/case=edge/lib=throttled-2 	 1	 2000 ns/op	 110.0 admitted	 110.0 policy-max
BenchmarkAccuracy/case=edge/lib=throttled-2 	 1	 2000 ns/op	 110.0 admitted	 2.000 errors	 110.0 policy-max
PASS
BenchmarkMemory/work=hotkey/lib=sluice-2         	  300000	       110.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMemory/work=hotkey/lib=xrate-2          	  300000	       130.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMemory/work=hotkey/lib=go-limiter-2     	  300000	        95.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMemory/work=hotkey/lib=sluice-2         	  300000	       900.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMemory/work=hotkey/lib=xrate-2          	  300000	       140.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkMemory/work=hotkey/lib=go-limiter-2     	  300000	        85.0 ns/op	       0 B/op	       0 allocs/op
ok  	github.com/sluice-go/sluice/benchmarks	12.3s
`

func TestParse(t *testing.T) {
	res, err := parse(strings.NewReader(raw))
	require.NoError(t, err)
	assert.Equal(t, "BenchmarkMemory/work=hotkey/lib=sluice", res.names[0], "the GOMAXPROCS suffix goes")
	assert.Equal(t, []float64{100, 110, 900}, res.samples["BenchmarkMemory/work=hotkey/lib=sluice"]["ns/op"])
	m, ok := res.median("BenchmarkMemory/work=hotkey/lib=sluice", "ns/op")
	require.True(t, ok)
	assert.Equal(t, 110.0, m, "the median, not the mean, which the 900 would drag")
	m, ok = res.median("BenchmarkRedis/callers=64/lib=sluice", "calls/decision")
	require.True(t, ok)
	assert.Equal(t, 0.061, m)
	_, ok = res.median("BenchmarkMemory/work=hotkey/lib=nobody", "ns/op")
	assert.False(t, ok)
	assert.Equal(t, []string{"sluice", "xrate", "go-limiter"}, res.values("BenchmarkMemory/", "lib"))
	assert.Equal(t, 3, res.rounds("ns/op"))
}

func TestRatioFallsBackWithoutPairs(t *testing.T) {
	res, err := parse(strings.NewReader("BenchmarkX/lib=sluice-2 1 10 ns/op\nBenchmarkX/lib=a-2 1 30 ns/op\nBenchmarkX/lib=sluice-2 1 20 ns/op\n"))
	require.NoError(t, err)
	q, lower, rounds, ok := res.ratio("BenchmarkX/lib=a", "BenchmarkX/lib=sluice", "ns/op")
	require.True(t, ok)
	assert.Equal(t, 2.0, q, "30 over the median of 10 and 20")
	assert.Equal(t, -1, lower)
	assert.Zero(t, rounds)
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
}

func TestTrimProcs(t *testing.T) {
	assert.Equal(t, "BenchmarkX/lib=go-limiter", trimProcs("BenchmarkX/lib=go-limiter-2"))
	assert.Equal(t, "BenchmarkX/lib=go-limiter", trimProcs("BenchmarkX/lib=go-limiter"), "a name whose last part holds a dash keeps it")
}

func TestRender(t *testing.T) {
	res, err := parse(strings.NewReader(raw))
	require.NoError(t, err)
	md := render(res, []roundLoad{{1, "0.5, 0.4, 0.3", "0.7, 0.5, 0.3"}}, []string{"cpu: AMD EPYC"})
	assert.Contains(t, md, "| hotkey | 110.0 | 140.0 (1.18×) | 90.0 (0.86×) |", "ratios are medians of the rounds' ratios: 1.5, 1.18, 0.16 and 0.9, 0.86, 0.09")
	assert.Contains(t, md, "| allocs/op | 0 | 0 | 0 |")
	assert.Contains(t, md, "| nethttp | sluice | 450.0 | +400.0 | 1 |")
	assert.Contains(t, md, "| nethttp | ulule | 1,250 | +1,200 (3.00×) | 13 |", "overhead over bare, and its ratio to sluice's")
	assert.Contains(t, md, "| decisions/s, 64 callers | 200,000 | 75,000 (0.38×) |")
	assert.Contains(t, md, "| script calls per decision, 64 callers | 0.061 | 1.000 |")
	assert.Contains(t, md, "Heap per key at 1,000,000 keys")
	assert.Contains(t, md, "| B/key | 50.5 | 217.6 (4.31×) |")
	assert.Contains(t, md, "| sluice | 110 / 110 |")
	assert.Contains(t, md, "| ulule | **199 / 110** |\n", "over the policy, in bold")
	assert.Contains(t, md, "2 rounds |\n| sluice-fixed | **199 / 110** |\n\n", "sluice's variants last")
	assert.Contains(t, md, "| decisions/s, 64 callers |")
	assert.Contains(t, md, "| throttled | 110 / 110, 2 failed in 2 rounds |", "errors summed over the rounds")
	assert.Contains(t, md, "- memory hotkey: go-limiter 90.0 ns against sluice's 110.0 ns (0.86×), ahead in 3 of 3 rounds", "a loss is listed")
	assert.NotContains(t, md, "memory hotkey: xrate", "ahead in one round of three, behind by both medians")
	assert.Contains(t, md, "1: 0.5, 0.4, 0.3 → 0.7, 0.5, 0.3;")
	assert.Contains(t, md, "- cpu: AMD EPYC")
}

func TestReplaceSection(t *testing.T) {
	text := []byte("# title\n\n" + beginMarker + "\nold tables\n" + endMarker + "\n\nnotes\n")
	out, err := replaceSection(text, "new tables\n")
	require.NoError(t, err)
	assert.Equal(t, "# title\n\n"+beginMarker+"\nnew tables\n"+endMarker+"\n\nnotes\n", string(out))

	_, err = replaceSection([]byte("no markers"), "x")
	assert.Error(t, err)
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644))
	}
	write("raw.txt", raw)
	write("loads.txt", "round 1 before:  03:00:00 up 1 min,  0 users,  load average: 0.50, 0.40, 0.30\n"+
		"round 1 after:  03:01:00 up 2 min,  0 users,  load average: 0.70, 0.50, 0.30\n")
	write("machine.txt", "cpu: AMD EPYC\ncores: 2\n")
	readme := filepath.Join(dir, "README.md")
	write("README.md", "intro\n"+beginMarker+"\n"+endMarker+"\n")

	require.NoError(t, run(dir, readme))
	tables, err := os.ReadFile(filepath.Join(dir, "tables.md"))
	require.NoError(t, err)
	assert.Contains(t, string(tables), "1: 0.50, 0.40, 0.30 → 0.70, 0.50, 0.30;")
	assert.Contains(t, string(tables), "- cores: 2")
	text, err := os.ReadFile(readme)
	require.NoError(t, err)
	assert.Equal(t, "intro\n"+beginMarker+"\n"+string(tables)+endMarker+"\n", string(text))

	write("raw.txt", "PASS\n")
	assert.ErrorContains(t, run(dir, ""), "no benchmark results")
}
