package redisrules_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/netip"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/admit/rulefile"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/redis/redisrules"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func client(t *testing.T) *goredis.Client {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	if err := c.Ping(context.Background()).Err(); err != nil {
		_ = c.Close()
		if os.Getenv("CI") != "" {
			t.Fatalf("Redis at %s: %v", addr, err)
		}
		t.Skipf("Redis at %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func prefix(t *testing.T, c *goredis.Client) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	p := "sluicetest:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, p+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return p
}

const v1 = `{"policies": {"a": {"quota": 1, "period": "1h", "burst": 1000}, "b": {"quota": 100000, "period": "1s"}},
 "rules": [{"policy": "a", "key": "client-ip"}, {"policy": "b", "key": "route"}]}`
const v2 = `{"policies": {"a": {"quota": 1, "period": "1h", "burst": 1000}, "b": {"quota": 200000, "period": "1s"}},
 "rules": [{"policy": "a", "key": "client-ip"}, {"policy": "b", "key": "route"}]}`

type view struct{ written bool }

func (*view) Context() context.Context            { return context.Background() }
func (*view) Peer() netip.Addr                    { return netip.MustParseAddr("192.0.2.1") }
func (*view) Header(string) string                { return "" }
func (*view) HeaderValues(string) []string        { return nil }
func (*view) Method() string                      { return "GET" }
func (*view) Path() string                        { return "/" }
func (*view) Route() string                       { return "/" }
func (*view) SetHeader(string, string)            {}
func (*view) ResponseHeader(string) string        { return "" }
func (v *view) WriteResponse(int, string, []byte) { v.written = true }

type instance struct {
	live   *rulefile.Live
	engine *admit.Engine
	store  *redisstore.Store
}

// newInstance is one instance of the fleet: its own store on the shared
// Redis, its engine, built from the file it ships with.
func newInstance(t *testing.T, c *goredis.Client, pfx string) *instance {
	s, err := redisstore.New(c, redisstore.WithPrefix(pfx))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	f, err := rulefile.Load("v1", bytes.NewReader([]byte(v1)))
	require.NoError(t, err)
	env := rulefile.Env{Store: s}
	rules, err := rulefile.Compile(f, env)
	require.NoError(t, err)
	e, err := admit.New(rules.Config())
	require.NoError(t, err)
	return &instance{live: rulefile.NewLive(rules, env), engine: e, store: s}
}

// Two instances follow the rules published in Redis: both converge on
// each version, and the policy the new version leaves unchanged keeps its
// count across the fleet.
func TestFleetConvergesAndKeepsState(t *testing.T) {
	c := client(t)
	pfx := prefix(t, c)
	key := pfx + "rules"
	fleet := []*instance{newInstance(t, c, pfx), newInstance(t, c, pfx)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, len(fleet))
	for _, in := range fleet {
		go func() {
			done <- redisrules.Follow(ctx, c, key, 50*time.Millisecond, func(_ string, body []byte) error {
				f, err := rulefile.Load(key, bytes.NewReader(body))
				if err != nil {
					return err
				}
				return in.live.Apply(f)
			}, nil)
		}()
	}
	defer func() {
		cancel()
		for range fleet {
			require.NoError(t, <-done)
		}
	}()
	sent := int64(0)
	send := func(n int) {
		for i := range n {
			in := fleet[i%len(fleet)]
			x := &view{}
			require.True(t, in.engine.Decide(x, x).Proceed)
			sent++
		}
	}
	send(100)
	_, err := redisrules.Publish(context.Background(), c, key, []byte(v2))
	require.NoError(t, err)
	f2, err := rulefile.Load("v2", bytes.NewReader([]byte(v2)))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		send(2) // requests flow while the fleet converges
		return fleet[0].live.Version() == f2.Version() && fleet[1].live.Version() == f2.Version()
	}, 20*time.Second, 10*time.Millisecond)
	send(100)
	a := fleet[0].live.Rules().Policy("a")
	d, err := fleet[1].store.Adjust(context.Background(), core.Request{Key: "192.0.2.1", Policy: a, Cost: 0})
	require.NoError(t, err)
	assert.Equal(t, 1000-sent, d.Remaining, "policy a's count survived the swap on every instance")
	assert.Equal(t, int64(200000), fleet[1].live.Rules().Policy("b").Quota())

	// A bad version is refused by every instance, which keeps v2.
	_, err = redisrules.Publish(context.Background(), c, key, []byte(`{"policies": {"a": {"quota": -1}}}`))
	require.NoError(t, err)
	require.Never(t, func() bool { return fleet[0].live.Version() != f2.Version() || fleet[1].live.Version() != f2.Version() },
		200*time.Millisecond, 20*time.Millisecond)
}
