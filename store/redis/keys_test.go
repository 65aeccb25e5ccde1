package redis

import (
	goredis "github.com/redis/go-redis/v9"
	"strings"
	"testing"
	"time"

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
	p := core.MustPolicy(core.Config{Name: "per-ip", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 5})
	pi := newPolicyInfo("app:", p)
	k := pi.key("10.0.0.1")
	assert.True(t, strings.HasPrefix(k, "app:{per-ip:"), k)
	assert.Equal(t, len("app:{per-ip:")+16+len(":10.0.0.1}"), len(k), "fingerprint as 16 hex digits")
	assert.Equal(t, "per-ip:"+k[len("app:{per-ip:"):len(k)-len(":10.0.0.1}")]+":10.0.0.1", hashTag(k))

	// User keys may hold any bytes: braces and percent signs are escaped so
	// the tag always covers the whole user key, and distinct keys stay
	// distinct.
	keys := []string{"a}b", "a%7Db", "a%b", "a%25b", "{x}", "}", "{", "%", "", "\x00\xff}{"}
	seen := map[string]string{}
	for _, uk := range keys {
		rk := pi.key(uk)
		if prev, ok := seen[rk]; ok {
			t.Fatalf("keys %q and %q share the Redis key %q", prev, uk, rk)
		}
		seen[rk] = uk
		tag := hashTag(rk)
		assert.True(t, strings.HasPrefix(tag, "per-ip:"), "tag %q of %q", tag, uk)
		assert.NotContains(t, tag, "}")
		assert.True(t, strings.HasSuffix(rk, tag+"}"), "the tag runs to the end of %q", rk)
	}

	// Keys are stable across processes: derived from the name and the
	// fingerprint, not from the policy's address.
	same := core.MustPolicy(core.Config{Name: "per-ip", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 5})
	assert.Equal(t, k, newPolicyInfo("app:", same).key("10.0.0.1"))
	other := core.MustPolicy(core.Config{Name: "per-ip", Algorithm: core.GCRA, Quota: 2, Period: time.Second, Burst: 5})
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

	s, err := New(c)
	require.NoError(t, err)
	assert.Equal(t, int64(0), s.grace, "no grace on the server's time")
	assert.Equal(t, DefaultTimeout, s.timeout)
	s, err = New(c, WithClock(core.SystemClock{}))
	require.NoError(t, err)
	assert.Equal(t, DefaultClockGrace.Milliseconds(), s.grace)
	s, err = New(c, WithTTLGrace(1500*time.Microsecond), WithClock(core.SystemClock{}))
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.grace, "rounded up to the ms")
	_, bounded := s.sc.(boundedScripter)
	assert.False(t, bounded, "a client with ContextTimeoutEnabled needs no watchdog")
}
