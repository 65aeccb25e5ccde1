package redisstore

import (
	"fmt"

	"github.com/sluice-go/sluice/core"
)

// WithSplit spreads the state of each key under p (matched by fingerprint)
// over n keys in n slots, each applying p.Share(n), for a key too hot for
// one Redis node. The fleet never admits more than the limit, but a request
// may be denied while other shards hold up to (n−1) shares, and a cost above
// Burst/n is Impossible; n must be 2 to p's Burst (at most 1024), and a
// LeakyQueue policy cannot be split. docs/redis.md says what a split
// decision reports.
func WithSplit(p *core.Policy, n int) Option {
	return func(s *Store) error {
		if p == nil {
			return fmt.Errorf("redisstore: WithSplit: nil policy")
		}
		if p.Algorithm() == core.LeakyQueue {
			return fmt.Errorf("redisstore: WithSplit(%s): a leaky queue cannot be split: its shards would release requests together", p.Name())
		}
		if n < 2 || n > maxSplit {
			return fmt.Errorf("redisstore: WithSplit(%s): n must be 2 to %d, got %d", p.Name(), maxSplit, n)
		}
		if int64(n) > p.Burst() {
			return fmt.Errorf("redisstore: WithSplit(%s): n must be at most the policy's Burst, %d, got %d: each shard holds at least one unit, so %d shards would admit %d", p.Name(), p.Burst(), n, n, n)
		}
		share, err := p.Share(n)
		if err != nil {
			return fmt.Errorf("redisstore: WithSplit(%s, %d): %w", p.Name(), n, err)
		}
		return s.configure(p, func(pi *policyInfo) {
			pi.share, pi.shards = newPolicyInfo(s.prefix, share), n
		})
	}
}

// maxSplit bounds WithSplit: a key split a thousand ways is a limit to
// rethink.
const maxSplit = 1024

// configure records how an option sets up p's info, done in New once the
// prefix is known; a policy may be configured once.
func (s *Store) configure(p *core.Policy, setup func(*policyInfo)) error {
	if s.configured == nil {
		s.configured = make(map[uint64]*policyInfo)
	}
	if _, ok := s.configured[p.Fingerprint()]; ok {
		return fmt.Errorf("redisstore: policy %s is split or leased already; choose one", p.Name())
	}
	s.configured[p.Fingerprint()] = &policyInfo{p: p}
	s.setups = append(s.setups, func() {
		pi := newPolicyInfo(s.prefix, p)
		setup(pi)
		s.configured[p.Fingerprint()] = pi
	})
	return nil
}

// layerOf returns the layer that decides cost units of key under pi: its
// own key, or under a split policy, the next shard's.
func layerOf(pi *policyInfo, key string, cost int64) layer {
	if pi.shards == 0 {
		return layer{key: pi.key(key), info: pi, cost: cost}
	}
	i := int(pi.next.Add(1) % uint64(pi.shards))
	return layer{key: pi.share.shardKey(key, i), info: pi.share, cost: cost}
}

// decisionOf reads the decision of a layer of p (whose info is pi) from
// its four integers.
func decisionOf(p *core.Policy, pi *policyInfo, r []int64) core.Decision {
	if pi.shards == 0 {
		return decision(p, r)
	}
	d := decision(pi.share.p, r)
	d.Policy, d.Limit = p, p.Burst()
	d.Remaining = min(d.Remaining*int64(pi.shards), d.Limit)
	return d
}
