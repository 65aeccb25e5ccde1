package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sluice-go/sluice/core"

	"github.com/sluice-go/sluice/fields"
)

// BreakerTransport is an [http.RoundTripper] that guards every host with its
// own [Breaker]: while it is open, requests fail at once with a
// [*CircuitOpenError]. 5xx answers (but 501, 505 and 511), timeouts and
// connection errors count as failures, 4xx as successes; [NewTransport]
// includes this layer.
type BreakerTransport struct {
	base     http.RoundTripper
	breakers *breakerSet
}

// NewBreakerTransport wraps base (nil means [http.DefaultTransport]). Each
// host's breaker is built from cfg with Name set to the host; at most
// DefaultMaxHosts breakers are kept, idle closed ones evicted first. It
// fails, as [NewBreaker] does, when a field of cfg is out of range.
func NewBreakerTransport(base http.RoundTripper, cfg BreakerConfig) (*BreakerTransport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &BreakerTransport{base: base, breakers: newBreakerSet(cfg.withDefaults())}, nil
}

// RoundTrip implements [http.RoundTripper].
func (t *BreakerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	host, err := hostKey(req)
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	p, err := t.breakers.get(host).Allow()
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	resp, err := roundTrip(t.base, req)
	ra, hasRA := retryAfterOf(resp, t.breakers.cfg.Clock.Now())
	t.breakers.report(req.Context(), p, resp, err, ra, hasRA)
	return resp, err
}

// State returns the state of host's breaker (closed if it has none). host
// is the request URL's host[:port], matched case-insensitively.
func (t *BreakerTransport) State(host string) BreakerState {
	if b := t.breakers.lookup(strings.ToLower(host)); b != nil {
		return b.State()
	}
	return BreakerClosed
}

// CloseIdleConnections forwards to the base transport when it supports it.
func (t *BreakerTransport) CloseIdleConnections() { closeIdle(t.base) }

// breakerSet holds one breaker per host.
type breakerSet struct {
	cfg   BreakerConfig
	mu    sync.Mutex
	table *hostTable[*Breaker]
}

// newBreakerSet takes a validated config with defaults.
func newBreakerSet(cfg BreakerConfig) *breakerSet {
	return &breakerSet{cfg: cfg, table: newHostTable(DefaultMaxHosts, func(b *Breaker, _ time.Time) bool {
		return b.peek() == BreakerClosed // forgetting a closed breaker loses little
	})}
}

func (s *breakerSet) get(host string) *Breaker {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.get(host, now, func() *Breaker {
		cfg := s.cfg
		cfg.Name = host
		return newBreaker(cfg)
	})
}

func (s *breakerSet) lookup(host string) *Breaker {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := s.table.lookup(host, now)
	return b
}

// report records an HTTP attempt's outcome. Only server failures and
// timeouts count against the host: an attempt the caller cancelled (ctx)
// says nothing about it, whatever error the base transport made of it.
func (s *breakerSet) report(ctx context.Context, p BreakerPermit, resp *http.Response, err error, retryAfter time.Duration, hasRA bool) {
	switch {
	case err != nil:
		if _, transient := transientReason(err); transient && !errors.Is(ctx.Err(), context.Canceled) {
			p.Done(core.Failed)
		} else {
			p.Done(core.Ignored)
		}
	case !isServerFailure(resp.StatusCode):
		p.Done(core.Succeeded)
	case resp.StatusCode == http.StatusServiceUnavailable && hasRA:
		p.FailUntil(s.cfg.Clock.Now().Add(retryAfter))
	default:
		p.Done(core.Failed)
	}
}

// hostKey is the key of per-host state: the URL's host[:port], lower-cased.
// A request without a URL is an error, as it is for [http.Transport].
func hostKey(req *http.Request) (string, error) {
	if req.URL == nil {
		return "", errors.New("client: nil Request.URL")
	}
	h := req.URL.Host
	if h == "" {
		h = req.Host
	}
	return strings.ToLower(h), nil
}

// roundTrip calls rt, turning a broken RoundTripper's nil response with a
// nil error into an error, so that no layer has to guard against it.
func roundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := rt.RoundTrip(req)
	if resp == nil && err == nil {
		err = errors.New("client: base RoundTripper returned a nil *Response with a nil error")
	}
	return resp, err
}

// retryAfterOf parses a response's Retry-After field.
func retryAfterOf(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	v := resp.Header["Retry-After"]
	if len(v) == 0 {
		return 0, false
	}
	return fields.ParseRetryAfter(v[0], now)
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
