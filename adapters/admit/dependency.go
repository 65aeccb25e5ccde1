package admit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"
)

// Dependency links the admission of the routes that call a dependency to
// what a client of that dependency has learned of its capacity, so that
// backpressure travels: a service its dependency throttles admits about
// what the dependency will accept, and answers the excess at once, rather
// than taking requests in only to hold them in its client or fail them
// after a wait. With sluice's client:
//
//	t, _ := client.NewTransport(nil)
//	cfg.Dependencies = []httplimit.Dependency{{
//		Name:     "payments",
//		Routes:   []string{"POST /checkout"},
//		Capacity: t.HostCapacity("payments.internal:8443"),
//	}}
//
// A request of those routes that the rules allow (and before it takes a
// slot of Config.Concurrency) is admitted while the dependency accepts
// requests: at most at the rate it accepts, with a tenth of a second's
// worth in a burst, and none while it is closed (a Retry-After, a spent
// quota, an open breaker). The others are answered at once with 503, a
// Retry-After derived from the dependency's own advice (the time it stays
// closed, or until the next request fits its rate), and a problem body of
// the RateLimit draft's temporary-reduced-capacity type. Other routes are
// untouched; in shadow mode the request proceeds and only the observer
// sees it.
type Dependency struct {
	// Name names the dependency in problem bodies and observer events
	// (core.Event.LimitName): printable ASCII without quotes or
	// backslashes, as policy names. Required, and unique in a Config.
	Name string
	// Routes lists the routes that call the dependency, as Rule.Routes
	// does; empty means every request.
	Routes []string
	// Capacity is what a client of the dependency knows of its capacity.
	// Required.
	Capacity Capacity
	// Public lets the answers of the requests shed for the dependency name
	// it (the default problem body's detail and "dependency" member): an
	// API whose clients know the dependency (a public upstream) may. By
	// default they say only that a dependency has reduced capacity, since
	// an internal name tells a client nothing it can use.
	Public bool
}

// Capacity is what a client of a dependency knows of the dependency's
// capacity (Dependency.Capacity); sluice's client.Transport has one per
// host (Transport.HostCapacity).
type Capacity interface {
	// Capacity reports, at now, the rate in requests per second the
	// dependency accepts (0 or less: nothing limits it), how long it
	// accepts nothing (0: it accepts some now), and why, in a few words.
	// It is called for every request of the dependency's routes, and must
	// be quick and safe for concurrent use.
	Capacity(now time.Time) (rate float64, closed time.Duration, reason string)
}

// dependencyLimit is the limit a dependency's capacity puts on admission at
// one moment, and why: the Err of the observer's events for the dependency.
type dependencyLimit struct {
	Name   string        // the Dependency's
	Rate   float64       // requests per second admitted, 0 when nothing limits them
	Closed time.Duration // how long nothing is admitted, 0 when something is
	Reason string        // what the dependency's client gave: "quota", "retry-after", "breaker open", ...
	public bool          // the Dependency is Public
}

// Error describes the limit.
func (l *dependencyLimit) Error() string {
	switch {
	case l.Closed > 0:
		return fmt.Sprintf("admit: dependency %s closed for %v (%s)", l.Name, l.Closed, l.Reason)
	case l.Rate > 0:
		return fmt.Sprintf("admit: dependency %s admits %.4g requests/s (%s)", l.Name, l.Rate, l.Reason)
	}
	return "admit: dependency " + l.Name + " unlimited"
}

// dependencyBurst is how much of a dependency's rate may be admitted back
// to back: a tenth of a second's worth (at least one request), as much as
// sluice's client sends at once before it paces.
const dependencyBurst = 100 * time.Millisecond

// gate admits the requests of one Dependency: a GCRA at the rate the
// dependency accepts, which follows every change of it.
type gate struct {
	Dependency
	routes  map[route]struct{} // nil: every request
	observe core.Observer      // Config.Observer

	mu       sync.Mutex
	tat      time.Time       // the GCRA's theoretical arrival time
	reported dependencyLimit // the limit last reported to the observer
}

// newGates validates cfg's Dependencies (and AdvertiseConcurrency, the
// other admission setting this file's functions read).
func newGates(cfg *Config) ([]*gate, error) {
	if cfg.AdvertiseConcurrency {
		if cfg.Concurrency == nil {
			return nil, errors.New("admit: Config.AdvertiseConcurrency is set without a Concurrency limit")
		}
		if _, ok := cfg.Concurrency.(SlotGauge); !ok {
			return nil, fmt.Errorf("admit: Config.AdvertiseConcurrency needs a Concurrency that reports its limit and requests in flight (a SlotGauge); %T does not", cfg.Concurrency)
		}
	}
	deps := cfg.Dependencies
	var gates []*gate
	names := make(map[string]bool, len(deps))
	for i, d := range deps {
		g := &gate{Dependency: d, observe: cfg.Observer}
		switch {
		case d.Capacity == nil:
			return nil, fmt.Errorf("admit: Dependencies[%d].Capacity is nil", i)
		case !validName(d.Name):
			return nil, fmt.Errorf("admit: Dependencies[%d].Name %q is not printable ASCII without quotes or backslashes", i, d.Name)
		case names[d.Name]:
			return nil, fmt.Errorf("admit: Dependencies[%d].Name %q is used twice", i, d.Name)
		}
		names[d.Name] = true
		if len(d.Routes) > 0 {
			var err error
			if g.routes, err = parseRoutes(d.Routes); err != nil {
				return nil, fmt.Errorf("admit: Dependencies[%d] (%s): %w", i, d.Name, err)
			}
		}
		gates = append(gates, g)
	}
	return gates, nil
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return s != ""
}

// depend passes r through the gates of the dependencies its route calls,
// after the rules allowed it with d (nil if no rule applied), under charge
// for rules with Charge. It reports whether r was shed, and the Verdict
// then: answered 503, its charge given back; in shadow mode, it proceeds.
func (e *Engine) depend(r *Request, w Writer, d *core.Decision, charge *Settlement) (Verdict, bool, error) {
	now := e.clock.Now()
	ctx := r.view.Context()
	for _, g := range e.gates {
		if g.routes != nil {
			ok, err := matches(g.routes, r)
			if err != nil {
				if charge != nil {
					charge.refund()
				}
				return Verdict{}, false, fmt.Errorf("admit: dependency %s has Routes: %w", g.Name, err)
			}
			if !ok {
				continue
			}
		}
		lim, wait, ok := g.admit(ctx, now)
		if ok {
			continue
		}
		if g.observe != nil {
			g.observe(ctx, core.Event{Kind: core.Shed, LimitName: g.Name, Err: lim})
		}
		if e.shadow {
			continue
		}
		if charge != nil {
			charge.refund()
		}
		return e.shedForDependency(r, w, d, lim, wait), true, nil
	}
	return Verdict{}, false, nil
}

// pass takes a request the rules allowed with d (nil if no rule applied)
// on: through the gates of its dependencies, then to its slot under
// Config.Concurrency if it takes one, reserving res or settling charge as
// admit does.
func (e *Engine) pass(r *Request, w Writer, d *core.Decision, res *core.Reservation, charge *Settlement, sl slotReq) Verdict {
	if len(e.gates) > 0 {
		v, shed, err := e.depend(r, w, d, charge)
		if err != nil {
			return e.fail(r, w, err)
		}
		if shed {
			return v
		}
	}
	if sl.ok {
		v := e.admit(r, w, d, res, charge, sl)
		if v.Proceed && e.advertise {
			e.advertiseSlots(r, w)
		}
		return v
	}
	if charge != nil {
		return Verdict{Proceed: true, Settlement: charge}
	}
	return Verdict{Proceed: true, Reservation: res}
}

// admit decides a request at now; when it is refused, wait is how long
// until one would be admitted.
func (g *gate) admit(ctx context.Context, now time.Time) (lim *dependencyLimit, wait time.Duration, ok bool) {
	rate, closed, reason := g.Capacity.Capacity(now)
	if !(rate > 0) || math.IsInf(rate, 1) { // NaN too
		rate = 0
	}
	cur := dependencyLimit{Name: g.Name, Rate: rate, Closed: max(closed, 0), Reason: reason, public: g.Public}
	g.mu.Lock()
	changed := g.reported.changed(cur)
	if changed {
		g.reported = cur
	}
	switch {
	case cur.Closed > 0:
		wait = cur.Closed
	case rate > 0:
		interval := time.Duration(float64(time.Second) / rate)
		tolerance := max(dependencyBurst-interval, 0)
		tat := laterOf(g.tat, now)
		if early := tat.Sub(now); early > tolerance {
			wait = early - tolerance
		} else {
			g.tat, ok = tat.Add(interval), true
		}
	default:
		g.tat, ok = time.Time{}, true
	}
	g.mu.Unlock()
	if changed && g.observe != nil {
		units := int64(math.Ceil(min(cur.Rate, math.MaxInt32)))
		if cur.Closed > 0 {
			units = 0
		}
		g.observe(ctx, core.Event{Kind: core.LimitChanged, LimitName: g.Name, Limit: units, Cause: cur.Reason, Err: &cur})
	}
	return &cur, wait, ok
}

// changed reports whether next differs enough from l to be reported: a
// change of reason, the dependency closing or opening, or a rate that
// moved by more than a tenth.
func (l dependencyLimit) changed(next dependencyLimit) bool {
	switch {
	case l.Reason != next.Reason, (l.Closed > 0) != (next.Closed > 0), (l.Rate > 0) != (next.Rate > 0):
		return true
	}
	return math.Abs(next.Rate-l.Rate) > l.Rate/10
}

// shedForDependency answers a request shed for lim: 503, Retry-After
// (wait, in whole seconds, at least 1) and the Deny function's body.
func (e *Engine) shedForDependency(r *Request, w Writer, d *core.Decision, lim *dependencyLimit, wait time.Duration) Verdict {
	return e.shed(r, w, d, Denial{Status: statusUnavailable, RetryAfter: max(seconds(wait), 1), Dependency: lim.Name, Public: lim.public})
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
