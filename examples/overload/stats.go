package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// stats counts what the service answered, second by second and in all,
// and what its one observer saw of the rate limit and the concurrency
// limit.
type stats struct {
	mu    sync.Mutex
	sec   Second
	lat   []time.Duration // the second's 200s
	total Totals
}

func newStats() *stats { return &stats{total: Totals{Reasons: map[string]int{}}} }

// Second is what the service answered in one second.
type Second struct {
	Offered  int           // requests that arrived
	OK       int           // answered 200
	Limited  int           // answered 429, by the rate limit
	Shed     [classes]int  // answered 503, by class
	Other    int           // answered anything else
	P50, P99 time.Duration // of the 200s' latency, arrival to answer

	arrived [classes]int // requests that arrived, by class
}

// Totals is what the service answered in a whole run, and what the
// observer saw.
type Totals struct {
	Offered, OK, Limited, Other int
	Shed                        [classes]int   // answered 503, by class
	Arrived                     [classes]int   // requests that arrived, by class
	Denied                      int            // rate denials the observer saw
	Sheds                       int            // sheds the observer saw
	Reasons                     map[string]int // the sheds, by reason
	InFlight, Waiting           int            // the concurrency limit's, once the load is over
}

// classes counts the classes, which lines show in this order: critical,
// default, sheddable (see priorityIndex).
const classes = 3

// priorityIndex is the index of the class an X-Priority header value names,
// as classOf reads it.
func priorityIndex(priority string) int {
	switch priority {
	case "critical":
		return 0
	case "sheddable":
		return 2
	}
	return 1
}

// count wraps the whole service (the middleware included) and counts each
// request's answer, as its client sees it.
func (s *stats) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.record(priorityIndex(r.Header.Get("X-Priority")), rec.status, time.Since(start))
	})
}

func (s *stats) record(class, status int, latency time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sec.Offered++
	s.sec.arrived[class]++
	switch status {
	case http.StatusOK:
		s.sec.OK++
		s.lat = append(s.lat, latency)
	case http.StatusTooManyRequests:
		s.sec.Limited++
	case http.StatusServiceUnavailable:
		s.sec.Shed[class]++
	default:
		s.sec.Other++
	}
}

// observe is the service's one observer: the rate limiter's decisions and
// the concurrency limit's events (through backpressure.Config.Observer) alike.
func (s *stats) observe(_ context.Context, e core.Event) {
	switch e.Kind {
	case core.Denied:
		s.mu.Lock()
		s.total.Denied++
		s.mu.Unlock()
	case core.Shed:
		reason := "canceled"
		var rej *backpressure.ShedError
		if errors.As(e.Err, &rej) {
			reason = rej.Reason.String()
		}
		s.mu.Lock()
		s.total.Sheds++
		s.total.Reasons[reason]++
		s.mu.Unlock()
	}
}

// second returns the second's counts, with its percentiles, and starts the
// next.
func (s *stats) second() Second {
	s.mu.Lock()
	sec, lat := s.sec, s.lat
	s.sec, s.lat = Second{}, make([]time.Duration, 0, len(lat))
	t := &s.total
	t.Offered += sec.Offered
	t.OK += sec.OK
	t.Limited += sec.Limited
	t.Other += sec.Other
	for i := range classes {
		t.Shed[i] += sec.Shed[i]
		t.Arrived[i] += sec.arrived[i]
	}
	s.mu.Unlock()
	if len(lat) > 0 {
		slices.Sort(lat)
		sec.P50, sec.P99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return sec
}

// totals returns the whole run's counts, the current second's included.
func (s *stats) totals() Totals {
	s.second()
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.total
	t.Reasons = maps.Clone(s.total.Reasons)
	return t
}

const header = "   s  phase    offered    200    429   503 crit/def/shed   limit  in flight     p50     p99"

func (sec Second) line(n int, phase string, limit, inFlight int) string {
	return fmt.Sprintf("%4d  %-7s %8d %6d %6d   %4d /%4d /%4d %7d %10d %7s %7s",
		n, phase, sec.Offered, sec.OK, sec.Limited, sec.Shed[0], sec.Shed[1], sec.Shed[2], limit, inFlight, ms(sec.P50), ms(sec.P99))
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(time.Millisecond).String()
}

func (t Totals) String() string {
	reasons := make([]string, 0, len(t.Reasons))
	for r := range t.Reasons {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for i, r := range reasons {
		reasons[i] = fmt.Sprintf("%s %d", r, t.Reasons[r])
	}
	return fmt.Sprintf("in all: %d offered, %d answered 200, %d 429, %d 503 (critical %d of %d, default %d of %d, sheddable %d of %d), %d other\n"+
		"the one observer saw %d rate denials and %d sheds (%s); in flight at the end %d, waiting %d",
		t.Offered, t.OK, t.Limited, t.Shed[0]+t.Shed[1]+t.Shed[2], t.Shed[0], t.Arrived[0], t.Shed[1], t.Arrived[1], t.Shed[2], t.Arrived[2], t.Other,
		t.Denied, t.Sheds, strings.Join(reasons, ", "), t.InFlight, t.Waiting)
}

// statusWriter records the status a response was written with.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}
