package redisstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// cpuTime reads a process's user+system CPU time from /proc (Linux).
func cpuTime(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return time.Duration(u+s) * 10 * time.Millisecond // USER_HZ is 100
}

// TestCPUPerDecision is a diagnostic, run on demand (SLUICE_CPU=1): the CPU
// a decision costs the Redis server and this client, with 64 callers, for
// the floor (a script returning 1) and this store (other libraries: see the
// benchmarks module). CPU time
// varies much less than throughput on a machine whose load drifts, and at
// 64 callers both sides are CPU-bound, so it is the steadiest comparison:
//
//	SLUICE_CPU=1 go test ./store/redis/redisstore -run TestCPUPerDecision -v
func TestCPUPerDecision(t *testing.T) {
	if os.Getenv("SLUICE_CPU") == "" {
		t.Skip("diagnostic; set SLUICE_CPU=1 to run")
	}
	srv := startServer(t)
	opts := clientOptions(srv.addr())
	opts.PoolSize = 128
	c := goredis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	s, err := New(c, WithTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	floor := goredis.NewScript("return 1")
	policy := func(alg core.Algorithm) *core.Policy {
		return core.MustPolicy(core.PolicyConfig{Name: "cpu-" + alg.String(), Algorithm: alg, Quota: 1000, Period: time.Second, Burst: 1000})
	}
	gcra, tb := policy(core.GCRA), policy(core.TokenBucket)
	type impl struct {
		name string
		_    []string
		op   func(string) error
	}
	impls := []impl{
		{"floor", nil, func(k string) error {
			return floor.Run(ctx, c, []string{k}).Err()
		}},
		{"gcra", nil, func(k string) error { _, err := s.Take(ctx, core.Request{Key: k, Policy: gcra, Cost: 1}); return err }},
		{"token-bucket", nil, func(k string) error { _, err := s.Take(ctx, core.Request{Key: k, Policy: tb, Cost: 1}); return err }},
	}
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	const n, callers = 60_000, 64
	for _, pattern := range []string{"hot", "100k"} {
		for _, impl := range impls {
			var next atomic.Int64
			var wg sync.WaitGroup
			server, client, start := cpuTime(t, srv.cmd.Process.Pid), cpuTime(t, os.Getpid()), time.Now()
			for range callers {
				wg.Go(func() {
					for i := next.Add(1); i <= n; i = next.Add(1) {
						k := keys[0]
						if pattern == "100k" {
							k = keys[i%int64(len(keys))]
						}
						if err := impl.op(k); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			us := func(d time.Duration) float64 { return float64(d.Microseconds()) / n }
			t.Logf("%-4s %-12s Redis %5.2f µs/decision, client %5.2f µs/decision, %6.0f decisions/s",
				pattern, impl.name, us(cpuTime(t, srv.cmd.Process.Pid)-server), us(cpuTime(t, os.Getpid())-client), n/time.Since(start).Seconds())
		}
	}
}
