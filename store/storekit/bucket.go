package storekit

import (
	"github.com/sluice-go/sluice/core"
)

// tokenBucket refills lazily: only whole tokens are added, and the time of the
// last whole token is kept, so no fraction of a token is ever lost or rounded.
func (p *spec) tokenBucket(s *State, now, cost int64, commit bool, d *core.Decision) {
	tokens, last := p.refill(*s, now)
	since := now - last // < interval unless the bucket is full
	allowed := cost <= p.burst && tokens >= cost
	retry := int64(0)
	if allowed {
		tokens -= cost
	} else if cost <= p.burst {
		retry = (cost-tokens)*p.interval - since
	}
	reset := int64(0)
	if tokens < p.burst {
		reset = (p.burst-tokens)*p.interval - since
	}
	if commit && allowed {
		*s = State{tokens, last}
	}
	p.decide(d, allowed, cost, tokens, reset, retry)
}

func (p *spec) refill(s State, now int64) (tokens, last int64) {
	if s.IsZero() {
		return p.burst, now
	}
	tokens, last = s.a, s.b
	if now > last {
		n := (now - last) / p.interval
		if n >= p.burst-tokens {
			return p.burst, now
		}
		tokens, last = tokens+n, last+n*p.interval
	}
	return tokens, last
}

// gcra keeps the theoretical arrival time (TAT): when the key would be full
// again. A request of cost c moves it c intervals later, and is allowed while
// the TAT stays within Burst intervals of now.
func (p *spec) gcra(s *State, now, cost int64, commit bool, d *core.Decision) {
	tat := max(s.a, now)
	span := p.burst * p.interval
	allowed, retry := false, int64(0)
	if cost <= p.burst { // a larger cost is Impossible, and its product could overflow
		next := tat + cost*p.interval
		if allowed = next-span <= now; allowed {
			tat = next
		} else {
			retry = next - span - now
		}
	}
	if commit && allowed {
		*s = State{tat, 0}
	}
	p.decide(d, allowed, cost, floorDiv(span-(tat-now), p.interval), tat-now, retry)
}

// leakyQueue keeps GCRA's theoretical arrival time, which here is when the
// queue drains: a request of cost c is the c units after everything queued,
// so its turn ends c intervals after the later of the TAT and now. The
// first Burst intervals of the queue pass at once; a request ending beyond
// them waits until its end is Burst intervals away, and is admitted only if
// that wait is within the bound. A denial takes nothing; its RetryAfter is
// when the wait shrinks to the bound.
func (p *spec) leakyQueue(s *State, now, cost int64, commit bool, d *core.Decision) {
	tat := max(s.a, now)
	span := p.burst * p.interval
	allowed, wait, retry := false, int64(0), int64(0)
	if cost <= p.most { // a larger cost is Impossible, and its product could overflow
		next := tat + cost*p.interval
		wait = max(next-now-span, 0)
		if allowed = wait <= p.bound; allowed {
			tat = next
		} else {
			retry = wait - p.bound
		}
	}
	if commit && allowed {
		*s = State{tat, 0}
	}
	p.decide(d, allowed, cost, floorDiv(span-(tat-now), p.interval), tat-now, retry)
	if allowed && cost > 0 {
		d.Delay = micros(wait)
	}
}

// leakyBucket is the token bucket seen from the other side: the level is the
// bucket's emptiness, draining one unit per interval.
func (p *spec) leakyBucket(s *State, now, cost int64, commit bool, d *core.Decision) {
	level, last := p.leak(*s, now)
	since := now - last
	allowed := cost <= p.burst && level+cost <= p.burst
	retry := int64(0)
	if allowed {
		level += cost
	} else if cost <= p.burst {
		retry = (level+cost-p.burst)*p.interval - since
	}
	reset := int64(0)
	if level > 0 {
		reset = level*p.interval - since
	}
	if commit && allowed {
		*s = State{level, last}
	}
	p.decide(d, allowed, cost, p.burst-level, reset, retry)
}

func (p *spec) leak(s State, now int64) (level, last int64) {
	if s.IsZero() {
		return 0, now
	}
	level, last = s.a, s.b
	if now > last {
		n := (now - last) / p.interval
		if n >= level {
			return 0, now
		}
		level, last = level-n, last+n*p.interval
	}
	return level, last
}
