package sim

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"
)

// CapacityChange returns the capacity-change run for cfg: twice the
// starting capacity offered throughout, the backend's concurrency halved
// 20s into the measured span and doubled back 20s later, traced every
// 100ms.
func CapacityChange(cfg Config) Config {
	cfg.Load = 2
	cfg.Trace = 100 * time.Millisecond
	cfg.Changes = []Change{
		{At: cfg.Warmup + cfg.Span/3, Workers: cfg.Workers / 2},
		{At: cfg.Warmup + 2*cfg.Span/3, Workers: cfg.Workers},
	}
	return cfg
}

// ServiceChange returns the service-time-change run of issue 19: C=32
// workers at S=20ms (σ 0.5), twice that capacity offered throughout, the
// service time doubled to 40ms 4s into the run (the service, or a
// dependency, got slower: each request costs twice as much, and the
// concurrency the backend carries stays C), measured from 2s to 12s and
// traced every 100ms.
func ServiceChange() Config {
	return Config{Workers: 32, Service: 20 * time.Millisecond, Spread: 0.5, Load: 2,
		Timeout: time.Second, Warmup: 2 * time.Second, Span: 10 * time.Second, Seed: 1,
		Trace:   100 * time.Millisecond,
		Changes: []Change{{At: 4 * time.Second, Service: 40 * time.Millisecond}}}
}

// Phase is what the requests completed during one phase of a run measured.
type Phase struct {
	Goodput  float64 // completed in time, as a share of the phase's capacity
	Good     int     // completed in time
	P50, P99 time.Duration
	// Settled is the time from the phase's start until the limit stayed,
	// for 2s, within 20% of where it ended the phase (its median over the
	// phase's last 5s); -1 if it never did, 0 for a limit that never moves.
	Settled time.Duration
}

// Phases splits r, a run of cfg, into its phases: from the end of the
// warm-up to the first change, between changes, and from the last to the
// end of the run. Changes during the warm-up start no phase.
func Phases(cfg Config, r Result) []Phase {
	end := cfg.Warmup + cfg.Span
	bounds := []time.Duration{cfg.Warmup}
	for _, ch := range cfg.Changes {
		if ch.At > cfg.Warmup && ch.At < end {
			bounds = append(bounds, ch.At)
		}
	}
	bounds = append(bounds, end)
	ps := make([]Phase, len(bounds)-1)
	for i := range ps {
		from, to := bounds[i], bounds[i+1]
		var lat []time.Duration
		good := 0
		for _, c := range r.Done {
			if c.At >= from && c.At < to {
				lat = append(lat, c.Latency)
				if c.Latency <= cfg.Timeout {
					good++
				}
			}
		}
		ps[i] = Phase{
			Goodput: float64(good) / Capacity(cfg, from, to),
			Good:    good,
			P50:     Percentile(lat, 0.5),
			P99:     Percentile(lat, 0.99),
			Settled: Settled(r.Trace, from, to),
		}
	}
	return ps
}

// Settled returns the time from `from` until the limit in trace stays
// within 20% of its final level (its median over the last 5s before `to`)
// for 2s, before `to`; -1 if it never does.
func Settled(trace []Point, from, to time.Duration) time.Duration {
	const hold, tail = 2 * time.Second, 5 * time.Second
	var last []int
	for _, p := range trace {
		if p.At >= to-tail && p.At < to {
			last = append(last, p.Limit)
		}
	}
	if len(last) == 0 {
		return -1
	}
	slices.Sort(last)
	level := float64(last[len(last)/2])
	var since time.Duration = -1
	for _, p := range trace {
		if p.At < from || p.At >= to {
			continue
		}
		if math.Abs(float64(p.Limit)-level) > 0.2*level {
			since = -1
			continue
		}
		if since < 0 {
			since = p.At
		}
		if p.At-since >= hold {
			return since - from
		}
	}
	return -1
}

// Chart draws the limit of each run over time (and the backend's true
// concurrency) as an SVG image.
func Chart(cfg Config, runs []Result) []byte {
	const w, h, left, right, top, bottom = 900, 420, 60, 130, 30, 50
	end := cfg.Warmup + cfg.Span
	ymax := 0
	for _, r := range runs {
		for _, p := range r.Trace {
			ymax = max(ymax, p.Limit, p.Workers)
		}
	}
	ymax = (ymax*12/10/25 + 1) * 25
	x := func(t time.Duration) float64 { return left + float64(w-left-right)*t.Seconds()/end.Seconds() }
	y := func(v int) float64 { return float64(h-bottom) - float64(h-top-bottom)*float64(v)/float64(ymax) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">Concurrency limit over time, as the backend's capacity halves and then doubles back</text>`+"\n", left)
	fmt.Fprintf(&b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">limit (requests in flight)</text>`+"\n", (h-bottom+top)/2)
	for v := 0; v <= ymax; v += 25 {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n",
			left, y(v), w-right, y(v), left-6, y(v)+4, v)
	}
	for t := time.Duration(0); t <= end; t += 10 * time.Second {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%.0fs</text>`+"\n",
			x(t), top, x(t), h-bottom, x(t), h-bottom+18, t.Seconds())
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">seconds since the start; offered load %gx the starting capacity</text>`+"\n", (w-right+left)/2, h-10, cfg.Load)
	colors := map[string]string{"static": "#1f77b4", "static C/2": "#9467bd", "aimd": "#d62728", "gradient": "#2ca02c"}
	line := func(points []Point, v func(Point) int, color, dash string) {
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="`, color, dash)
		prev := -1
		for i, p := range points {
			if i > 0 && v(p) != prev {
				fmt.Fprintf(&b, "%.1f,%.1f ", x(p.At), y(prev)) // steps, not slopes
			}
			fmt.Fprintf(&b, "%.1f,%.1f ", x(p.At), y(v(p)))
			prev = v(p)
		}
		b.WriteString("\"/>\n")
	}
	legend := 0
	label := func(name, color, dash string) {
		ly := top + 10 + 20*legend
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`+"\n",
			w-right+10, ly, w-right+35, ly, color, dash, w-right+40, ly+4, name)
		legend++
	}
	for _, r := range runs {
		if color, ok := colors[r.Contender]; ok && len(r.Trace) > 0 {
			line(r.Trace, func(p Point) int { return p.Limit }, color, "")
			label(r.Contender, color, "")
		}
	}
	if len(runs) > 0 {
		const dash = ` stroke-dasharray="6 4"`
		line(runs[0].Trace, func(p Point) int { return p.Workers }, "#555", dash)
		label("true C", "#555", dash)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
