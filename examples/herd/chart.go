package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// The chart's geometry, in SVG user units.
const (
	chartWidth   = 880
	chartHeight  = 460
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 48
	marginBottom = 56
	plotWidth    = chartWidth - marginLeft - marginRight
	plotHeight   = chartHeight - marginTop - marginBottom
)

// lineColors tells the strategies apart: the Okabe-Ito palette, which
// colour-blind readers can tell apart too, in the order of Strategies.
var lineColors = []string{"#000000", "#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00"}

// WriteSVG draws results (from Simulate on cfg) as an SVG chart: attempts
// per second since the crash, one line per strategy, on a logarithmic
// scale, with the outage shaded and a legend giving each strategy's total
// calls and drain time. It uses nothing but the standard library, and the
// same results give the same bytes.
func WriteSVG(w io.Writer, cfg Config, results []Result) error {
	seconds, peak := 1, 1
	for _, r := range results {
		seconds = max(seconds, len(r.PerSecond))
		peak = max(peak, r.Peak)
	}
	xTick := niceStep(seconds)
	seconds = (seconds + xTick - 1) / xTick * xTick
	decades := max(1, int(math.Ceil(math.Log10(float64(peak+1)))))
	x := func(sec int) float64 { return marginLeft + plotWidth*float64(sec)/float64(seconds) }
	// A log axis has no 0: it starts at 1 (10^0), and a second with no
	// attempts is drawn on the axis, which the axis title says.
	y := func(n int) float64 {
		if n < 1 {
			return marginTop + plotHeight
		}
		return marginTop + plotHeight*(1-math.Log10(float64(n))/float64(decades))
	}

	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, chartHeight, chartWidth, chartHeight)
	p(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartWidth, chartHeight)
	p(`<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", marginLeft,
		escape(fmt.Sprintf("%s clients fail at once; the service is down for %v, then serves %s attempts/s",
			thousands(cfg.Clients), cfg.Outage, thousands(cfg.Capacity))))

	// The outage, shaded.
	outageEnd := min(float64(marginLeft+plotWidth), marginLeft+plotWidth*cfg.Outage.Seconds()/float64(seconds))
	p(`<rect x="%d" y="%d" width="%.1f" height="%d" fill="#eeeeee"/>`+"\n",
		marginLeft, marginTop, outageEnd-marginLeft, plotHeight)
	p(`<text x="%.1f" y="%d" fill="#777777" text-anchor="middle">service down</text>`+"\n",
		(marginLeft+outageEnd)/2, marginTop+16)

	// Axes, grid and ticks.
	p(`<g stroke="#dddddd">` + "\n")
	for k := 1; k <= decades; k++ {
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", marginLeft, y(pow10(k)), marginLeft+plotWidth, y(pow10(k)))
	}
	p("</g>\n")
	p(`<g stroke="#333333">` + "\n")
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", marginLeft, marginTop+plotHeight, marginLeft+plotWidth, marginTop+plotHeight)
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", marginLeft, marginTop, marginLeft, marginTop+plotHeight)
	p("</g>\n")
	p(`<g text-anchor="middle">` + "\n")
	for sec := 0; sec <= seconds; sec += xTick {
		p(`<text x="%.1f" y="%d">%d</text>`+"\n", x(sec), marginTop+plotHeight+18, sec)
	}
	p(`<text x="%.1f" y="%d">seconds since the crash</text>`+"\n", marginLeft+plotWidth/2.0, chartHeight-14)
	p("</g>\n")
	p(`<g text-anchor="end">` + "\n")
	for k := 0; k <= decades; k++ {
		p(`<text x="%d" y="%.1f">%s</text>`+"\n", marginLeft-8, y(pow10(k))+4, thousands(pow10(k)))
	}
	p("</g>\n")
	p(`<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">attempts per second (log scale; none: on the axis)</text>`+"\n",
		marginTop+plotHeight/2.0)

	// One stepped line per strategy: each second's count across that second.
	for i, r := range results {
		var pts strings.Builder
		for sec, n := range r.PerSecond {
			fmt.Fprintf(&pts, "%.1f,%.1f %.1f,%.1f ", x(sec), y(n), x(sec+1), y(n))
		}
		if len(r.PerSecond) > 0 {
			fmt.Fprintf(&pts, "%.1f,%.1f", x(len(r.PerSecond)), y(0))
		}
		p(`<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"><title>%s</title></polyline>`+"\n",
			lineColors[i%len(lineColors)], dashes(i), strings.TrimSpace(pts.String()), escape(r.Strategy))
	}

	// The legend, with what each strategy cost.
	const legendWidth, rowHeight = 330, 18
	lx, ly := marginLeft+plotWidth-legendWidth-8, marginTop+8
	p(`<rect x="%d" y="%d" width="%d" height="%d" fill="#ffffff" fill-opacity="0.9" stroke="#999999"/>`+"\n",
		lx, ly, legendWidth, rowHeight*len(results)+10)
	for i, r := range results {
		ry := ly + 14 + rowHeight*i
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`+"\n",
			lx+8, ry-4, lx+30, ry-4, lineColors[i%len(lineColors)], dashes(i))
		outcome := fmt.Sprintf("drained in %.1f s", r.Drain.Seconds())
		if r.GaveUp > 0 {
			outcome = fmt.Sprintf("%s gave up", thousands(r.GaveUp))
		}
		p(`<text x="%d" y="%d">%s: %s calls, %s</text>`+"\n", lx+38, ry,
			escape(r.Strategy), thousands(r.Attempts), escape(outcome))
	}
	p("</svg>\n")
	return b.Flush()
}

// dashes dashes every other line after the first three, so that lines of
// similar colours differ in pattern too.
func dashes(i int) string {
	if i >= 3 && i%2 == 1 {
		return ` stroke-dasharray="6 3"`
	}
	return ""
}

// niceStep returns a tick spacing for an axis of n seconds: about ten
// ticks, at 1, 2 or 5 times a power of ten.
func niceStep(n int) int {
	for step := 1; ; step *= 10 {
		for _, m := range []int{1, 2, 5} {
			if n <= 10*step*m {
				return step * m
			}
		}
	}
}

func pow10(k int) int {
	n := 1
	for range k {
		n *= 10
	}
	return n
}

// thousands writes n with thousands separators: 12,345.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// escape makes s safe as XML character data.
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}
