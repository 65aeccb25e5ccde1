package redisstore

import (
	"fmt"

	"github.com/sluice-go/sluice/core"
)

// WithSplit spreads the state of each key under p over n keys, for a key so
// hot that one Redis node serving it all is the bottleneck (a global limit
// on a Cluster). Each of the n keys applies p.Share(n), one nth of the
// limit, and sits in a slot of its own (its hash tag holds the shard's
// number); each decision takes from one of them, the next in turn on this
// instance.
//
// The error this costs, for the bucket family and the window family alike:
//
//   - never more than the limit: the n shares together hold no more than
//     p does (n may not exceed p's Burst: each share holds at least one
//     unit, and n shares of a smaller Burst would hold n units);
//   - a request may be denied while other shards still hold units, up to
//     (n−1) times a share's burst at worst: the shards drain evenly when
//     every request costs the same and every instance takes them in turn,
//     unevenly otherwise;
//   - a cost above a share's burst (Burst/n) is Impossible.
//
// A decision reports p, p's Burst as its Limit, and its shard's Remaining
// times n (at most Burst) as an estimate of what is left; ResetAfter and
// RetryAfter are its shard's. Adjust charges or refunds the next shard in
// turn, so sums stay right; Reset forgets every shard. p is matched by its
// fingerprint: an equal policy built elsewhere is split too.
//
// A LeakyQueue policy cannot be split: n queues each releasing at a nth of
// the rate, taken in turn, release up to n requests at once, where one
// queue releases them one Interval apart, which is what it is for.
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
