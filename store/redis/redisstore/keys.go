package redisstore

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/sluice-go/sluice/core"
)

// policyInfo is what the store derives once per policy: the tail of its
// keys and its script arguments, boxed once so that building a call
// allocates nothing for them.
type policyInfo struct {
	p      *core.Policy
	fp     uint64
	alg    core.Algorithm
	prefix string // <prefix>{
	tail   string // }<name>:<fingerprint hex>
	args   []any  // algorithm; burst (quota); interval µs (period µs); a queue's bound µs

	// A policy split over keys (WithSplit): the share each key applies, and
	// the shard the next decision goes to.
	share  *policyInfo
	shards int
	next   atomic.Uint64
	// A policy served from leases (WithLease).
	lease *leaseConfig
}

func newPolicyInfo(prefix string, p *core.Policy) *policyInfo {
	fp := p.Fingerprint()
	hex := strconv.FormatUint(fp, 16)
	// The scripts need the burst and interval of a bucket, the quota (its
	// burst) and period of a window, and a queue's bound on waiting.
	per := p.Period().Microseconds()
	if p.Interval() > 0 {
		per = p.Interval().Microseconds()
	}
	args := []any{int64(p.Algorithm()), p.Burst(), per}
	if p.Algorithm() == core.LeakyQueue {
		args = append(args, p.MaxDelay().Microseconds())
	}
	return &policyInfo{
		p:      p,
		fp:     fp,
		alg:    p.Algorithm(),
		prefix: prefix + "{",
		tail:   "}" + p.Name() + ":" + strings.Repeat("0", 16-len(hex)) + hex,
		args:   args,
	}
}

// key returns the Redis key of the user key k:
//
//	<prefix>{<k escaped>}<policy name>:<fingerprint>
//
// The hash tag is the user key alone, so that every policy's state of one
// key (the per-IP and the login limit of one client) is in one Cluster slot
// and a layered request on them is one script call.
//
// The empty key is written "%", which no escaped key is, so that its tag is
// not empty either (Redis hashes a key whose tag is empty whole).
func (pi *policyInfo) key(k string) string { return pi.prefix + tagOf(k) + pi.tail }

// shardKey returns the Redis key of shard i of the user key k under a split
// policy (pi is the share's): the shard is in the hash tag, so that the
// shards of one key fall in different Cluster slots. "%s" never appears in
// an escaped key, so no user key can name another's shard.
func (pi *policyInfo) shardKey(k string, i int) string {
	return pi.prefix + tagOf(k) + "%s" + strconv.Itoa(i) + pi.tail
}

// tagOf returns k as the hash tag holds it: escaped, and "%" for the empty
// key.
func tagOf(k string) string {
	switch {
	case k == "":
		return "%"
	case strings.IndexByte(k, '}') < 0 && strings.IndexByte(k, '%') < 0:
		return k
	}
	return escapeKey(k)
}

// escapeKey makes a user key safe inside a hash tag: '}' would end the tag
// early, so it becomes "%7D", and '%' becomes "%25" so that the escaping is
// one-to-one. Every other byte is kept as is.
func escapeKey(k string) string {
	var b strings.Builder
	b.Grow(len(k) + 8)
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case '}':
			b.WriteString("%7D")
		case '%':
			b.WriteString("%25")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// hashTag returns the part of key that Redis Cluster hashes: the bytes
// between the first '{' and the first '}' after it, when that is not empty;
// the whole key otherwise.
func hashTag(key string) string {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			return key[s+1 : s+1+e]
		}
	}
	return key
}

// slot returns the Redis Cluster hash slot of key: CRC16-XMODEM of its hash
// tag, modulo 16384.
func slot(key string) int {
	return int(crc16(hashTag(key)) & 16383)
}

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 is CRC16-XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster uses for key slots.
func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^s[i]]
	}
	return c
}

// info returns the policy's derived data, cached per policy.
func (s *Store) info(p *core.Policy) *policyInfo {
	if v, ok := s.policies.Load(p); ok {
		return v.(*policyInfo)
	}
	pi, ok := s.configured[p.Fingerprint()]
	if !ok {
		pi = newPolicyInfo(s.prefix, p)
	}
	if s.nPolicies.Load() < maxCachedPolicies {
		if _, loaded := s.policies.LoadOrStore(p, pi); !loaded {
			s.nPolicies.Add(1)
		}
	}
	return pi
}
