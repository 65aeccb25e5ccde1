package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

func TestCRC16(t *testing.T) {
	assert.Equal(t, uint16(0x31C3), crc16("123456789"), "the CRC16-XMODEM check value")
	// Slots quoted in the Redis Cluster specification and its tutorials.
	assert.Equal(t, 12182, slot("foo"))
	assert.Equal(t, 5061, slot("bar"))
	assert.Equal(t, 866, slot("hello"))
	assert.Equal(t, slot("user1000"), slot("{user1000}.following"))
	assert.Equal(t, slot("{user1000}.following"), slot("{user1000}.followers"))
}

func TestHashTag(t *testing.T) {
	for key, tag := range map[string]string{
		"a{b}c":    "b",
		"{}abc":    "{}abc", // an empty tag: the whole key
		"abc{":     "abc{",
		"abc}":     "abc}",
		"a{b{c}d}": "b{c",
		"{a}{b}":   "a",
		"plain":    "plain",
	} {
		assert.Equal(t, tag, hashTag(key), key)
	}
}

func TestKeyLayout(t *testing.T) {
	p := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 5})
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.GCRA, Quota: 3, Period: time.Minute, Burst: 3})
	pi := newPolicyInfo("app:", p)
	k := pi.key("10.0.0.1")
	assert.Regexp(t, `^app:\{10\.0\.0\.1\}per-ip:[0-9a-f]{16}$`, k, "fingerprint as 16 hex digits")
	assert.Equal(t, "10.0.0.1", hashTag(k), "the tag is the user key")
	lk := newPolicyInfo("app:", login).key("10.0.0.1")
	assert.NotEqual(t, k, lk)
	assert.Equal(t, slot(k), slot(lk), "one client's layers share a slot")

	// User keys may hold any bytes: braces and percent signs are escaped so
	// the tag always covers the whole user key, and distinct keys stay
	// distinct; the empty key has a tag of its own too.
	keys := []string{"a}b", "a%7Db", "a%b", "a%25b", "{x}", "}", "{", "%", "", "%25", "\x00\xff}{"}
	seen := map[string]string{}
	for _, uk := range keys {
		rk := pi.key(uk)
		if prev, ok := seen[rk]; ok {
			t.Fatalf("keys %q and %q share the Redis key %q", prev, uk, rk)
		}
		seen[rk] = uk
		tag := hashTag(rk)
		assert.NotEmpty(t, tag, uk)
		assert.NotContains(t, tag, "}")
		assert.Equal(t, "app:{"+tag+"}per-ip:", rk[:len(rk)-16], "the tag is all of %q", uk)
		assert.Equal(t, slot(rk), slot(newPolicyInfo("app:", login).key(uk)), "%q: its layers share a slot", uk)
	}

	// Keys are stable across processes: derived from the name and the
	// fingerprint, not from the policy's address.
	same := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 5})
	assert.Equal(t, k, newPolicyInfo("app:", same).key("10.0.0.1"))
	other := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 2, Period: time.Second, Burst: 5})
	assert.NotEqual(t, k, newPolicyInfo("app:", other).key("10.0.0.1"), "a changed policy starts afresh")
}

func TestOptions(t *testing.T) {
	c := goredis.NewClient(clientOptions(redisAddr())) // New does not connect
	defer c.Close()
	_, err := New(nil)
	assert.Error(t, err)
	_, err = New(c, WithPrefix("a{b"))
	assert.Error(t, err)
	_, err = New(c, WithTimeout(0))
	assert.Error(t, err)
	_, err = New(c, WithClock(nil))
	assert.Error(t, err)
	_, err = New(c, WithDenyCache(0))
	assert.Error(t, err)
	_, err = New(c, WithTTLGrace(-time.Second))
	assert.Error(t, err)

	_, err = New(c, WithBatch(0))
	assert.Error(t, err)
	_, err = New(c, WithBatch(maxBatch+1))
	assert.Error(t, err)
	_, err = New(c, WithConns(0))
	assert.Error(t, err)
	_, err = New(c, WithConnTimeout(0))
	assert.Error(t, err)

	open := func(opts ...Option) *Store {
		s, err := New(c, opts...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s := open()
	assert.Equal(t, "s", s.graceArg, "no grace on the server's time")
	assert.Equal(t, DefaultTimeout, s.timeout)
	assert.Equal(t, time.Second, s.connWait, "at least a second")
	s = open(WithClock(core.SystemClock{}), WithTimeout(time.Second))
	assert.Equal(t, 8*time.Second, s.connWait, "8 times the timeout")
	assert.Equal(t, DefaultClockGrace.Milliseconds(), s.graceArg)
	s = open(WithTTLGrace(1500*time.Microsecond), WithClock(core.SystemClock{}))
	assert.Equal(t, int64(2), s.graceArg, "rounded up to the ms")
}

// logLines is a go-redis logger that keeps what it is told.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Printf(_ context.Context, format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// TestOwnConnectionsStartClean: the store's connections, made from the
// client's options, set up as a client of their own would: go-redis has
// nothing to complain of (a copied push-notification processor made it
// refuse to register its handlers twice).
func TestOwnConnectionsStartClean(t *testing.T) {
	sharedClient(t) // or skip
	var logged logLines
	goredis.SetLogger(&logged)
	defer goredis.SetLogger(quiet{})
	// A client not used yet, as an application's usually is when it makes
	// its store: its push settings are still as NewClient left them.
	c := goredis.NewClient(&goredis.Options{Addr: redisAddr()})
	t.Cleanup(func() { _ = c.Close() })
	s := newTestStore(t, c)
	_, err := s.Take(context.Background(), core.Request{Key: "k", Policy: core.MustPolicy(core.PolicyConfig{Name: "clean", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 5}), Cost: 1})
	require.NoError(t, err)
	logged.mu.Lock()
	defer logged.mu.Unlock()
	assert.Empty(t, logged.lines, "%q", logged.lines)
}
