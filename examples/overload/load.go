package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// load drives the service open-loop: requests arrive at random (a Poisson
// process) at the rate asked, whether or not earlier ones have been
// answered, as the users of a real service arrive; one abusive client
// sends its own steady stream on top. Each request comes from one of
// Config.Clients client addresses, through the trusted proxy's
// X-Forwarded-For, with a class: 10% critical, 30% sheddable, the rest
// default.
type load struct {
	cfg    Config
	url    string
	client *http.Client
	rng    *rand.Rand // used by drive's goroutine alone
	wg     sync.WaitGroup
	failed atomic.Int64 // requests that got no answer
}

func newLoad(cfg Config, url string) *load {
	transport := &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 10 * time.Second}
	return &load{
		cfg:    cfg,
		url:    url,
		client: &http.Client{Transport: transport, Timeout: cfg.Timeout},
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
	}
}

// abuser is the abusive client's address.
const abuser = "192.0.2.66"

// drive offers rate requests a second for d, and the abusive client's on
// top, each on a goroutine of its own.
func (l *load) drive(ctx context.Context, rate float64, d time.Duration) {
	start := time.Now()
	end := start.Add(d)
	next := start
	abuse := start
	abuseEvery := time.Duration(float64(time.Second) / l.cfg.Abuser)
	for {
		at, client, priority := next, "", ""
		if abuse.Before(next) {
			at, client = abuse, abuser
			abuse = abuse.Add(abuseEvery)
		} else {
			client = fmt.Sprintf("10.1.%d.%d", l.rng.IntN(l.cfg.Clients)/250, 1+l.rng.IntN(l.cfg.Clients)%250)
			switch p := l.rng.Float64(); {
			case p < 0.1:
				priority = "critical"
			case p < 0.4:
				priority = "sheddable"
			}
			next = next.Add(time.Duration(l.rng.ExpFloat64() / rate * float64(time.Second)))
		}
		if !at.Before(end) {
			return
		}
		if wait := time.Until(at); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		l.send(ctx, client, priority)
	}
}

// send sends one request, and reads its answer on a goroutine of its own.
func (l *load) send(ctx context.Context, client, priority string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.url, nil)
	if err != nil {
		l.failed.Add(1)
		return
	}
	req.Header.Set("X-Forwarded-For", client)
	if priority != "" {
		req.Header.Set("X-Priority", priority)
	}
	l.wg.Go(func() {
		resp, err := l.client.Do(req)
		if err != nil {
			l.failed.Add(1)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	})
}

// wait returns once every request sent has been answered, or has failed,
// and closes the idle connections.
func (l *load) wait() {
	l.wg.Wait()
	l.client.CloseIdleConnections()
}
