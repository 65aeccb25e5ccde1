package client

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSendRateProbesFromOnePerRetryAfter(t *testing.T) {
	s := newSendRate(epoch, 2*time.Second)
	assert.Equal(t, 2*time.Second, s.wait(epoch), "Retry-After is a floor")
	assert.InDelta(t, 0.5, s.rate(epoch), 1e-9, "one per Retry-After")
	assert.InDelta(t, 1.0, s.rate(epoch.Add(time.Second)), 1e-9, "doubling every second")
	assert.InDelta(t, 4.0, s.rate(epoch.Add(3*time.Second)), 1e-9)

	// No Retry-After: one a second to start with.
	assert.InDelta(t, 1.0, newSendRate(epoch, 0).rate(epoch), 1e-9)
	// An absurd one stays within bounds.
	assert.InDelta(t, minSendRate, newSendRate(epoch, time.Hour).rate(epoch), 1e-9)
	assert.InDelta(t, maxSendRate, newSendRate(epoch, time.Nanosecond).rate(epoch), 1e-9)
}

func TestSendRateSpacesRequests(t *testing.T) {
	s := newSendRate(epoch, 0) // 1/s, doubling
	s.take(epoch)
	assert.Equal(t, time.Second, s.wait(epoch))
	at := epoch.Add(time.Second)
	s.take(at)
	assert.Equal(t, 500*time.Millisecond, s.wait(at), "2/s a second later")
}

func TestSendRateFirstCutHalvesTheProbe(t *testing.T) {
	s := newSendRate(epoch, time.Second)
	sent := epoch.Add(3 * time.Second) // 8/s by then
	s.throttled(sent, sent, time.Second)
	assert.False(t, s.probing)
	assert.InDelta(t, 4.0, s.wmax, 1e-9, "the 429 came during the last doubling")
	assert.Equal(t, 15*time.Second, s.k, "60 requests at 4/s")
	// The cubic: β·wmax at the cut, wmax at K, flat around it.
	assert.InDelta(t, 2.8, s.rate(sent), 1e-9)
	assert.InDelta(t, 4.0, s.rate(sent.Add(s.k)), 1e-9)
	assert.InDelta(t, 4.0*(1+0.3/8), s.rate(sent.Add(s.k*3/2)), 1e-9)
	assert.Equal(t, time.Second, s.wait(sent), "Retry-After is still a floor")
}

func TestSendRateLaterCutsMeanSentAndAccepted(t *testing.T) {
	s := newSendRate(epoch, 0)
	s.answered(epoch)            // the host accepted one since the first 429: the next one cuts
	s.throttled(epoch, epoch, 0) // 1/s at the first 429: wmax 0.5
	cut := epoch.Add(10 * time.Second)
	for range 30 {
		s.answered(epoch.Add(time.Second))
	}
	s.answered(epoch.Add(-time.Second)) // sent before the cut: not counted
	sentAt := s.rate(cut)
	s.throttled(cut, cut, 0)
	assert.InDelta(t, (sentAt+3.0)/2, s.wmax, 1e-9, "mean of the rate held to and the 3/s accepted")
	assert.Zero(t, s.accepted)

	// A 429 to a request sent before that cut says nothing new.
	before := *s
	s.throttled(cut.Add(-time.Millisecond), cut.Add(time.Second), time.Second)
	assert.Equal(t, before, *s)
}

func TestSendRateWaitsWhileItDoesNotBind(t *testing.T) {
	s := newSendRate(epoch, 0)
	s.throttled(epoch, epoch, 0)
	s.take(epoch)
	// The client is quiet for a minute: the curve moved on only to the
	// slot the rate gave it, then waited.
	want := s.rate(s.next)
	later := epoch.Add(time.Minute)
	s.take(later)
	assert.InDelta(t, want, s.rate(later), 1e-9)
	assert.False(t, s.expired(later))
}

func TestSendRateIsForgottenOnceItNoLongerBinds(t *testing.T) {
	s := newSendRate(epoch, 0)
	assert.False(t, s.expired(epoch.Add(maxProbe-1)))
	assert.True(t, s.expired(epoch.Add(maxProbe)), "a probe that drew no 429")

	s.answered(epoch)
	s.throttled(epoch, epoch, 0)
	// The cubic reaches 2·wmax at K·(1 + (1/(1-β))^(1/3)).
	k := s.k.Seconds()
	at := epoch.Add(time.Duration(k * (1 + 1.4938015821857216) * float64(time.Second)))
	assert.False(t, s.expired(at.Add(-time.Millisecond)))
	assert.True(t, s.expired(at.Add(time.Millisecond)))
}

// A 429 soon after the first, with nothing accepted in between, is the
// host still draining the burst that drew the first: it does not cut the
// probe, whose rate would otherwise fall to half of one request per
// Retry-After and take a minute to climb back.
func TestSendRateProbeIgnoresTheBurstsLast429s(t *testing.T) {
	s := newSendRate(epoch, 0)
	s.throttled(epoch.Add(500*time.Millisecond), epoch.Add(510*time.Millisecond), 0)
	assert.True(t, s.probing, "still probing")
	assert.InDelta(t, 1.0, s.wmax, 1e-9)
	// A doubling later, a 429 cuts as before.
	at := epoch.Add(probeDoubling)
	s.throttled(at, at, 0)
	assert.False(t, s.probing)
	assert.InDelta(t, 1.0, s.wmax, 1e-9, "half of 2/s")
}
