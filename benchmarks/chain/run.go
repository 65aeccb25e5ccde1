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
	Duration time.Duration // A's run; C halves its capacity halfway
	Capacity float64       // C's first capacity, requests/s
	Link     bool          // B's admission follows C
	Unpaced  bool          // B's client retries but does not pace
}

// phaseResult is what one half of a run measured.
type phaseResult struct {
	Offered, Served, Shed, Timeouts, Other int
	Linked                                 int   // of the 503s, those B's admission answered
	Limited                                int64 // 429s C answered
	CServed                                int64
	ShedP99, ShedP50                       time.Duration // latency of B's 503s, as A saw it
}

type result struct {
	Link        bool
	Unpaced     bool
	Phases      [2]phaseResult
	MaxInFlight int64
	Follow      time.Duration // from C's change until B's admission kept to C's new capacity; -1: never
}

// answer is one of A's requests, as A saw it.
type answer struct {
	at      time.Duration // when it was sent, from the start
	status  int           // 0: a timeout or transport error
	latency time.Duration
	linked  bool // a 503 B's admission answered for C, not its handler
}

func run(ctx context.Context, cfg runConfig) (result, error) {
	c, err := startC(cfg.Capacity)
	if err != nil {
		return result{}, err
	}
	defer c.srv.Close()
	b, err := startB(c.url, cfg.Link, cfg.Unpaced)
	if err != nil {
		return result{}, err
	}
	defer b.srv.Close()

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}, Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
	)
	start := time.Now()
	b.start = start
	half := cfg.Duration / 2
	gap := time.Duration(float64(time.Second) / cfg.Offered)
	go func() {
		time.Sleep(time.Until(start.Add(half)))
		c.half.Store(true)
	}()
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
	r := result{Link: cfg.Link, Unpaced: cfg.Unpaced, MaxInFlight: b.maxIn.Load()}
	var shed [2][]time.Duration
	for _, a := range answers {
		phase := 0
		if a.at >= half {
			phase = 1
		}
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
	for i := range r.Phases {
		r.Phases[i].Limited = c.limited[i].Load()
		r.Phases[i].CServed = c.served[i].Load()
		r.Phases[i].ShedP50, r.Phases[i].ShedP99 = quantile(shed[i], 0.5), quantile(shed[i], 0.99)
	}
	b.mu.Lock()
	r.Follow = follow(b.admitted, start.Add(half), cfg.Capacity/2)
	b.mu.Unlock()
	return r, nil
}

// follow returns how long after change the requests admitted kept to
// rate: from then on, no second holds more than 1.2·rate of them (and a
// tenth of a second's burst).
func follow(admitted []time.Time, change time.Time, rate float64) time.Duration {
	slices.SortFunc(admitted, time.Time.Compare)
	limit := int(1.2*rate + rate/10 + 1)
	last := time.Duration(0)
	for i, t := range admitted {
		if t.Before(change) {
			continue
		}
		// The admissions in the second ending at t.
		j, _ := slices.BinarySearchFunc(admitted, t.Add(-time.Second), time.Time.Compare)
		if i-j+1 > limit {
			last = t.Sub(change)
		}
	}
	return last
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(int(q*float64(len(ds))), len(ds)-1)]
}

func printTable(w io.Writer, cfg runConfig, rs []result) {
	fmt.Fprintf(w, "A offers %.0f/s for %v to B; C serves %.0f/s, then %.0f/s from %v.\n\n", cfg.Offered, cfg.Duration, cfg.Capacity, cfg.Capacity/2, cfg.Duration/2)
	fmt.Fprintln(w, "| link | C's capacity | offered | served end to end | of C's capacity | 429s drawn from C | B's 503s (by admission) | 503 p50 | 503 p99 | A's timeouts | B's max in flight | admission follows C within |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		link := "off"
		switch {
		case r.Link:
			link = "on"
		case r.Unpaced:
			link = "off, client unpaced"
		}
		for i, p := range r.Phases {
			capa := cfg.Capacity / float64(1+i)
			secs := (cfg.Duration / 2).Seconds()
			followed := "-"
			if i == 1 {
				followed = r.Follow.Round(10 * time.Millisecond).String()
			}
			fmt.Fprintf(w, "| %s | %.0f/s | %d | %d | %.0f%% | %d | %d (%d) | %v | %v | %d | %d | %s |\n",
				link, capa, p.Offered, p.Served, 100*float64(p.Served)/(capa*secs), p.Limited, p.Shed, p.Linked,
				p.ShedP50.Round(10*time.Microsecond), p.ShedP99.Round(10*time.Microsecond), p.Timeouts, r.MaxInFlight, followed)
		}
	}
	drawn := func(r result) int64 { return r.Phases[0].Limited + r.Phases[1].Limited }
	if on := rs[len(rs)-1]; on.Link {
		for _, r := range rs[:len(rs)-1] {
			if off := drawn(r); off > 0 {
				fmt.Fprintf(w, "\n429s drawn from C: %d with the link off (client unpaced: %v), %d on: %.1f%% fewer.", off, r.Unpaced, drawn(on), 100*(1-float64(drawn(on))/float64(off)))
			}
		}
		fmt.Fprintln(w)
	}
}
