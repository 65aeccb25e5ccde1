package admit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
)

// capacityOf is a Dependency.Capacity set by the test.
type capacityOf struct {
	mu     sync.Mutex
	rate   float64
	closed time.Duration
	reason string
}

func (c *capacityOf) set(rate float64, closed time.Duration, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rate, c.closed, c.reason = rate, closed, reason
}

func (c *capacityOf) Capacity(time.Time) (float64, time.Duration, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate, c.closed, c.reason
}

type events struct {
	mu  sync.Mutex
	got []core.Event
}

func (e *events) observe(_ context.Context, ev core.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ev)
}

func (e *events) take() []core.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	got := e.got
	e.got = nil
	return got
}

func decideAt(t *testing.T, m *Engine, path string) (int, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	_, v := decideHTTP(m, rec, httptest.NewRequest(http.MethodGet, path, nil), path, nil)
	if v.Proceed {
		return http.StatusOK, rec.Header()
	}
	return rec.Code, rec.Header()
}

// The admission follows the dependency's capacity at once, and the
// observer sees each change of the propagated limit, with why.
func TestDependencyAdmissionFollowsTheCapacity(t *testing.T) {
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	capa := &capacityOf{}
	var ev events
	m, err := New(Config{Clock: clock, Observer: ev.observe, Dependencies: []Dependency{{Name: "c", Routes: []string{"/call"}, Capacity: capa}}})
	require.NoError(t, err)

	// Nothing known: everything passes.
	for range 100 {
		code, _ := decideAt(t, m, "/call")
		require.Equal(t, http.StatusOK, code)
	}
	assert.Empty(t, ev.take(), "an unlimited dependency is no change")

	// 50/s: a tenth of a second's worth at once (an interval of 20ms,
	// 80ms early: five), then one every 20ms.
	capa.set(50, 0, "quota")
	admitted := 0
	for range 100 {
		if code, _ := decideAt(t, m, "/call"); code == http.StatusOK {
			admitted++
		}
	}
	assert.Equal(t, 5, admitted)
	got := ev.take()
	require.NotEmpty(t, got)
	assert.Equal(t, core.LimitChanged, got[0].Kind)
	assert.Equal(t, "c", got[0].LimitName)
	assert.Equal(t, int64(50), got[0].Limit)
	var lim *dependencyLimit
	require.ErrorAs(t, got[0].Err, &lim)
	assert.Equal(t, "quota", lim.Reason)
	assert.Equal(t, "quota", got[0].Cause)
	assert.Equal(t, core.Shed, got[1].Kind)
	assert.Len(t, got, 1+95)

	clock.Advance(time.Second)
	admitted = 0
	for range 20 {
		clock.Advance(10 * time.Millisecond)
		if code, _ := decideAt(t, m, "/call"); code == http.StatusOK {
			admitted++
		}
	}
	// One request per 10ms tick gains 10ms on the schedule each: nine
	// until 80ms ahead, then one every other tick.
	assert.Equal(t, 14, admitted)
	ev.take()

	// The capacity halves: admission follows on the next request.
	capa.set(25, 0, "quota")
	clock.Advance(time.Second)
	admitted = 0
	for range 100 {
		clock.Advance(10 * time.Millisecond)
		if code, _ := decideAt(t, m, "/call"); code == http.StatusOK {
			admitted++
		}
	}
	assert.InDelta(t, 25+2, admitted, 1, "25/s over a second, and the burst of 100ms")
	got = ev.take()
	assert.Equal(t, int64(25), got[0].Limit)

	// Closed by a breaker: Retry-After is its time left; the problem
	// says which dependency.
	capa.set(0, 4500*time.Millisecond, "breaker open")
	rec := httptest.NewRecorder()
	_, v := decideHTTP(m, rec, httptest.NewRequest(http.MethodGet, "/call", nil), "/call", nil)
	require.False(t, v.Proceed)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "5", rec.Header().Get("Retry-After"))
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	got = ev.take()
	assert.Equal(t, int64(0), got[0].Limit)
	require.ErrorAs(t, got[0].Err, &lim)
	assert.Equal(t, "breaker open", lim.Reason)
	assert.Equal(t, 4500*time.Millisecond, lim.Closed)

	// Other routes are untouched.
	code, _ := decideAt(t, m, "/other")
	assert.Equal(t, http.StatusOK, code)
}

func TestDependencyDenialReachesDeny(t *testing.T) {
	capa := &capacityOf{closed: time.Second, reason: "retry-after"}
	var seen string
	m, err := New(Config{Dependencies: []Dependency{{Name: "c", Capacity: capa}}, Deny: func(_ *Request, d *Denial) Response {
		seen = d.Dependency
		return Response{Status: d.Status, Body: []byte("later")}
	}})
	require.NoError(t, err)
	code, _ := decideAt(t, m, "/anything")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "c", seen)
}

func TestDependencyConfigErrors(t *testing.T) {
	capa := &capacityOf{}
	for _, tc := range []struct {
		deps []Dependency
		want string
	}{
		{[]Dependency{{Name: "c"}}, "Dependencies[0].Capacity is nil"},
		{[]Dependency{{Name: "", Capacity: capa}}, `Dependencies[0].Name ""`},
		{[]Dependency{{Name: `a"b`, Capacity: capa}}, `Dependencies[0].Name "a\"b"`},
		{[]Dependency{{Name: "c", Capacity: capa}, {Name: "c", Capacity: capa}}, `Dependencies[1].Name "c" is used twice`},
		{[]Dependency{{Name: "c", Capacity: capa, Routes: []string{"call"}}}, `Dependencies[0] (c): route "call"`},
	} {
		_, err := New(Config{Dependencies: tc.deps})
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}
