package client

import (
	"math"
	"time"
)

// sendRate is the rate a host is sent requests at once it has answered a
// 429 without rate-limit fields. With no fields to read the limit from, the
// transport learns one from the 429s, as TCP's CUBIC congestion control
// learns a link's capacity from losses and the AWS SDKs' adaptive retry
// mode a service's rate from throttling errors. The choices made here:
//
//   - Nothing is paced before the first 429: a host that never throttles
//     costs nothing.
//   - The first 429 says nothing about the rate, only that a burst ran
//     out. Its Retry-After (1s without one) says when one more request is
//     welcome, so the rate starts at one per Retry-After and doubles every
//     second until the next 429, as TCP's slow start does. That 429 came
//     during the last doubling, so half the rate then is the host's.
//   - A 429 within a doubling of the first, with nothing accepted in
//     between, is the host still draining the burst that drew the first:
//     it holds the probe for its Retry-After but does not cut it, or the
//     rate would fall to half of one request per Retry-After and take
//     maxCubicK to climb back.
//   - A later 429 cuts the rate to β = 0.7 of the rate the host is
//     believed to allow, wmax: the mean of the rate the client was held to
//     when the throttled request went out, which is over the host's limit
//     by the overshoot that emptied its burst allowance, and the rate the
//     host accepted since the previous cut, which is under it by what the
//     host's allowance could not store while the client sent less. The
//     AWS SDKs take the client's measured send rate instead, which after
//     an unpaced burst is far above any limit and takes many cuts, each a
//     429, to come down from.
//   - After a cut the rate grows back along a cubic: quickly at first,
//     flat as it nears wmax, then faster past it, probing for a limit that
//     went up. The time to regain wmax, K, is the time wmax takes to send
//     cubicRequests requests (within [minCubicK, maxCubicK]) rather than a
//     constant: the 429s drawn per request sent are then about the same
//     for a limit of 1 per second as for 100.
//   - Only a 429 to a request sent after the last cut cuts again: answers
//     to requests sent before it say what is already known (TCP, too, cuts
//     once per window of losses).
//   - While the client sends less than the rate allows, the curve waits:
//     the rate grows only while it binds, so that a rate learned at one
//     load still holds when the load comes back after a pause.
//   - Once the curve reaches twice wmax (or a probe has doubled for
//     maxProbe) without a 429, the limit no longer binds, and the rate is
//     forgotten. So is the rate of a host left quiet for as long: the
//     curve's clock runs on until the next request.
//
// Retry-After stays a floor: the retry layer and the pacer's hold on the
// host keep it, whatever the learned rate.
//
// A sendRate is not safe for concurrent use; the pacer holds its lock.
type sendRate struct {
	wmax     float64       // requests per second the host is believed to allow
	k        time.Duration // time the curve takes to regain wmax after a cut
	origin   time.Time     // where the curve starts: the last cut, moved on by idle time
	cutAt    time.Time     // when the rate was last cut
	probing  bool          // no measurement yet: doubling from a guess
	accepted int64         // answers other than 429 to requests sent since cutAt
	next     time.Time     // the next free slot
}

// Parameters of the learned rate.
const (
	// sendRateBeta is what a cut keeps of wmax (CUBIC's and the AWS SDKs'
	// β).
	sendRateBeta = 0.7
	// cubicRequests sets K to the time wmax takes to send this many
	// requests. More means fewer 429s and a slower climb to a limit that
	// went up: at 60, a steady client draws about 1.5 429s per 100
	// requests from a 2 r/s limit once it has learned it.
	cubicRequests = 60
	minCubicK     = time.Second
	maxCubicK     = time.Minute
	// probeDoubling is how often a probe doubles the rate.
	probeDoubling = time.Second
	// maxProbe ends a probe that drew no 429: it has doubled 20 times.
	maxProbe = 20 * probeDoubling
	// minSendRate is the slowest learned rate, one request per 10 s: below
	// it Retry-After spaces requests, not the rate.
	minSendRate = 0.1
	// maxSendRate bounds a rate: a million requests per second is no limit.
	maxSendRate = 1e6
)

// newSendRate starts learning at a first 429, answered at now; ra is its
// Retry-After, 0 if none.
func newSendRate(now time.Time, ra time.Duration) *sendRate {
	guess := 1.0
	if ra > 0 {
		guess = min(max(1/ra.Seconds(), minSendRate), maxSendRate)
	}
	return &sendRate{wmax: guess, origin: now, cutAt: now, probing: true, next: now.Add(ra)}
}

// rate returns the rate at t, in requests per second.
func (s *sendRate) rate(t time.Time) float64 {
	x := max(t.Sub(s.origin), 0).Seconds()
	var r float64
	if s.probing {
		r = s.wmax * math.Exp2(x/probeDoubling.Seconds())
	} else {
		k := s.k.Seconds()
		d := (x - k) / k
		r = s.wmax * (1 + (1-sendRateBeta)*d*d*d)
	}
	return min(max(r, minSendRate), maxSendRate)
}

// expired reports whether the rate no longer binds at now.
func (s *sendRate) expired(now time.Time) bool {
	if s.probing {
		return now.Sub(s.origin) >= maxProbe
	}
	return s.rate(now) >= 2*s.wmax
}

// wait returns how long a request that would go at now must wait for its
// slot.
func (s *sendRate) wait(now time.Time) time.Duration {
	return max(s.next.Sub(now), 0)
}

// interval returns the time between two slots at now.
func (s *sendRate) interval(now time.Time) time.Duration {
	return time.Duration(float64(time.Second) / s.rate(now))
}

// refund gives back the slot of a request that was not sent, at now.
func (s *sendRate) refund(now time.Time) {
	if s.next.After(now) {
		s.next = laterOf(s.next.Add(-s.interval(now)), now)
	}
}

// take counts a request sent at at.
func (s *sendRate) take(at time.Time) {
	if idle := at.Sub(s.next); idle > 0 {
		// The rate did not bind meanwhile: the curve waits.
		s.origin = s.origin.Add(idle)
		s.next = at
	}
	s.next = laterOf(s.next, at).Add(time.Duration(float64(time.Second) / s.rate(at)))
}

// answered counts an answer other than 429 to a request sent at sent.
func (s *sendRate) answered(sent time.Time) {
	if !sent.Before(s.cutAt) {
		s.accepted++
	}
}

// throttled records a 429, answered at now, to a request sent at sent; ra
// is its Retry-After, 0 if none.
func (s *sendRate) throttled(sent, now time.Time, ra time.Duration) {
	if sent.Before(s.cutAt) {
		return // nothing new
	}
	if s.probing && s.accepted == 0 && sent.Sub(s.cutAt) < probeDoubling {
		// Within a doubling of the first 429 and nothing accepted since:
		// the host is still draining the burst that drew it, and this
		// 429 says nothing of the rate. The probe waits for
		// Retry-After, and goes on.
		s.next = laterOf(s.next, now.Add(ra))
		return
	}
	var w float64
	if s.probing {
		w = s.rate(sent) / 2
	} else {
		w = s.rate(sent)
		if span := now.Sub(s.cutAt).Seconds(); span > 0 {
			w = (w + float64(s.accepted)/span) / 2
		}
	}
	s.wmax = min(max(w, minSendRate), maxSendRate)
	s.k = min(max(time.Duration(cubicRequests/s.wmax*float64(time.Second)), minCubicK), maxCubicK)
	s.probing = false
	s.origin, s.cutAt, s.accepted = now, now, 0
	s.next = laterOf(s.next, now.Add(ra))
}
