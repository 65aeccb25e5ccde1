package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

type runConfig struct {
	Offered  float64       // A's rate, requests/s
	Duration time.Duration // A's run, split evenly among the phases
	Phases   []float64     // C's capacity in each phase, requests/s
	Timeout  time.Duration // A's timeout
	Link     bool          // B's admission follows C
	Unpaced  bool          // B's client retries but does not pace
}

func (cfg runConfig) phaseLen() time.Duration { return cfg.Duration / time.Duration(len(cfg.Phases)) }

// phaseOf returns the phase a time since the start falls in.
func (cfg runConfig) phaseOf(at time.Duration) int {
	return min(int(at/cfg.phaseLen()), len(cfg.Phases)-1)
}

// phaseResult is what one phase of a run measured.
type phaseResult struct {
	Offered, Served, Shed, Timeouts, Other int
	Linked                                 int   // of the 503s, those B's admission answered
	Limited                                int64 // 429s C answered
	CServed                                int64
	ShedP99, ShedP50                       time.Duration // latency of B's 503s, as A saw it
	// Follow is how long after the phase began C's intake (the requests
	// reaching it, 429s included) kept to its new capacity; -1: never.
	Follow time.Duration
}

type result struct {
	Link        bool
	Unpaced     bool
	Phases      []phaseResult
	MaxInFlight int64
	// MaxHeld is the longest B held a request (its handler's time), and
	// Overheld the requests it held past A's timeout.
	MaxHeld  time.Duration
	Overheld int
}

// answer is one of A's requests, as A saw it.
type answer struct {
	at      time.Duration // when it was sent, from the start
	status  int           // 0: a timeout or transport error
	latency time.Duration
	linked  bool // a 503 B's admission answered for C, not its handler
}

func run(ctx context.Context, cfg runConfig) (result, error) {
	c, err := startC(cfg.Phases)
	if err != nil {
		return result{}, err
	}
	defer c.srv.Close()
	b, err := startB(c.url, cfg.Link, cfg.Unpaced)
	if err != nil {
		return result{}, err
	}
	defer b.srv.Close()

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}, Timeout: cfg.Timeout}
	defer hc.CloseIdleConnections()
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
	)
	start := time.Now()
	b.start, c.start = start, start
	go func() {
		for i := 1; i < len(cfg.Phases); i++ {
			time.Sleep(time.Until(start.Add(time.Duration(i) * cfg.phaseLen())))
			c.phase.Store(int32(i))
		}
	}()
	gap := time.Duration(float64(time.Second) / cfg.Offered)
	// Open loop: request i goes at start + i·gap, whatever came of the
	// others.
	for i := 0; ; i++ {
		at := time.Duration(i) * gap
		if at >= cfg.Duration || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Until(start.Add(at)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent := time.Now()
			a := answer{at: sent.Sub(start)}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/call", nil)
			if resp, err := hc.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				a.status = resp.StatusCode
				a.linked = resp.Header.Get("Content-Type") == "application/problem+json"
			}
			a.latency = time.Since(sent)
			mu.Lock()
			answers = append(answers, a)
			mu.Unlock()
		}()
	}
	wg.Wait()
	// B's handlers may go on after their callers left (retrying, say):
	// wait for them, so that none reaches into the next run.
	for deadline := time.Now().Add(time.Minute); b.inFlight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	r := result{Link: cfg.Link, Unpaced: cfg.Unpaced, MaxInFlight: b.maxIn.Load(), Phases: make([]phaseResult, len(cfg.Phases))}
	shed := make([][]time.Duration, len(cfg.Phases))
	for _, a := range answers {
		phase := cfg.phaseOf(a.at)
		p := &r.Phases[phase]
		p.Offered++
		switch a.status {
		case http.StatusOK:
			p.Served++
		case http.StatusServiceUnavailable:
			p.Shed++
			if a.linked {
				p.Linked++
			}
			shed[phase] = append(shed[phase], a.latency)
		case 0:
			p.Timeouts++
		default:
			p.Other++
		}
	}
	c.mu.Lock()
	intake := slices.Clone(c.intake)
	c.mu.Unlock()
	for i := range r.Phases {
		p := &r.Phases[i]
		p.Limited = c.limited[i].Load()
		p.CServed = c.served[i].Load()
		p.ShedP50, p.ShedP99 = quantile(shed[i], 0.5), quantile(shed[i], 0.99)
		from := time.Duration(i) * cfg.phaseLen()
		p.Follow = follow(intake, from, from+cfg.phaseLen(), cfg.Phases[i])
	}
	b.mu.Lock()
	for _, h := range b.held {
		r.MaxHeld = max(r.MaxHeld, h)
		if h > cfg.Timeout+50*time.Millisecond {
			r.Overheld++
		}
	}
	b.mu.Unlock()
	return r, nil
}

// follow returns how long after from the requests reaching C (at, times
// since the start) kept to capacity: from then on until to, every second
// holds capacity ± (10% + 2) of them. -1: never.
func follow(at []time.Duration, from, to time.Duration, capacity float64) time.Duration {
	slices.Sort(at)
	count := func(a, b time.Duration) int {
		i, _ := slices.BinarySearch(at, a)
		j, _ := slices.BinarySearch(at, b)
		return j - i
	}
	slack := 0.1*capacity + 2
	const step = 50 * time.Millisecond
	last := time.Duration(-1) // the start of the last window out of bounds
	for s := from; s+time.Second <= to; s += step {
		if n := float64(count(s, s+time.Second)); n < capacity-slack || n > capacity+slack {
			last = s
		}
	}
	switch {
	case last < 0:
		return 0
	case last+step+time.Second > to:
		return -1
	}
	return last + step - from
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(int(q*float64(len(ds))), len(ds)-1)]
}

func printTable(w io.Writer, cfg runConfig, rs []result) {
	fmt.Fprintf(w, "A offers %.0f/s for %v to B, and gives up after %v; C serves %v/s, %v each.\n\n", cfg.Offered, cfg.Duration, cfg.Timeout, cfg.Phases, cfg.phaseLen())
	fmt.Fprintln(w, "| B | C's capacity | offered | served end to end | of C's capacity | 429s drawn from C | B's 503s (by admission) | 503 p50 | 503 p99 | A's timeouts | C's intake follows within | B's max in flight | B held past A's timeout (longest) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		b := "default client"
		switch {
		case r.Link:
			b = "linked (Dependencies)"
		case r.Unpaced:
			b = "client unpaced"
		}
		for i, p := range r.Phases {
			capa := cfg.Phases[i]
			secs := cfg.phaseLen().Seconds()
			followed := "never"
			if p.Follow >= 0 {
				followed = p.Follow.Round(10 * time.Millisecond).String()
			}
			fmt.Fprintf(w, "| %s | %.0f/s | %d | %d | %.0f%% | %d | %d (%d) | %v | %v | %d | %s | %d | %d (%v) |\n",
				b, capa, p.Offered, p.Served, 100*float64(p.Served)/(capa*secs), p.Limited, p.Shed, p.Linked,
				p.ShedP50.Round(10*time.Microsecond), p.ShedP99.Round(10*time.Microsecond), p.Timeouts, followed,
				r.MaxInFlight, r.Overheld, r.MaxHeld.Round(time.Millisecond))
		}
	}
}
