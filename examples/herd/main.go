// Command herd is drill 2 of the reference: a thousand clients whose
// requests fail at the same moment, against a service that is down for 30
// seconds and comes back able to serve only half of them at once,
// simulated in virtual time. It compares no backoff, plain exponential
// backoff, full, equal and decorrelated jitter, and full jitter with a
// retry budget, and prints total calls, the peak load per second, and how
// long the herd took to clear after recovery.
//
//	go run ./examples/herd
//	go run ./examples/herd -clients 5000 -outage 60s -graph
//
// -svg draws attempts per second for every strategy as an SVG chart; the
// README's chart is
//
//	go run ./examples/herd -svg examples/herd/herd.svg
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	cfg := DefaultConfig()
	flag.IntVar(&cfg.Clients, "clients", cfg.Clients, "number of clients, all failing at once")
	flag.DurationVar(&cfg.Outage, "outage", cfg.Outage, "how long the service fails")
	flag.DurationVar(&cfg.Latency, "latency", cfg.Latency, "time to an answer")
	flag.IntVar(&cfg.Capacity, "capacity", cfg.Capacity, "calls per second the recovered service serves")
	flag.IntVar(&cfg.MaxAttempts, "attempts", cfg.MaxAttempts, "max attempts per request (0: no bound)")
	flag.DurationVar(&cfg.Deadline, "deadline", cfg.Deadline, "per-request deadline (0: none)")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	graph := flag.Bool("graph", false, "print calls per second as a text graph")
	svg := flag.String("svg", "", "write attempts per second as an SVG chart to this file")
	flag.Parse()

	if err := cfg.Validate(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d clients fail at once; the service is down for %v, then serves %d calls/s (%d at a time); %v answers; deadline %v, max attempts %d (0 = no limit)\n\n",
		cfg.Clients, cfg.Outage, cfg.Capacity, cfg.perWindow(), cfg.Latency, cfg.Deadline, cfg.MaxAttempts)
	var results []Result
	for _, s := range Strategies() {
		r, err := Simulate(cfg, s)
		if err != nil {
			log.Fatal(err)
		}
		results = append(results, r)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "strategy\tcalls\tcalls during outage\tafter\tpeak calls/s\tdrain\tsucceeded\tgave up\t")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d (t=%v)\t%v\t%d\t%d\t\n", r.Strategy, r.Attempts, r.OutageAttempts,
			r.Attempts-r.OutageAttempts, r.Peak, r.PeakAt, r.Drain.Round(10*time.Millisecond), r.Succeeded, r.GaveUp)
	}
	w.Flush()

	if *graph {
		for _, r := range results {
			fmt.Printf("\n%s: calls per second\n", r.Strategy)
			scale := max(1, r.Peak/60)
			for sec, n := range r.PerSecond {
				fmt.Printf("%4ds %7d %s\n", sec, n, strings.Repeat("#", n/scale))
			}
		}
	}
	if *svg != "" {
		var buf bytes.Buffer
		if err := WriteSVG(&buf, cfg, results); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*svg, buf.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("\nwrote %s\n", *svg)
	}
}
