// Command herd is drill 2 of the reference: a thousand clients against a
// service that fails for 30 seconds, simulated in virtual time, comparing no
// backoff, plain exponential backoff, full jitter, and full jitter with a
// retry budget. It prints total calls, the peak load per second, and how
// long the retry backlog took to drain after recovery.
//
//	go run ./examples/herd
//	go run ./examples/herd -clients 5000 -outage 60s -graph
package main

import (
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
	flag.IntVar(&cfg.Clients, "clients", cfg.Clients, "number of clients")
	flag.DurationVar(&cfg.Interval, "interval", cfg.Interval, "each client sends a request this often")
	flag.DurationVar(&cfg.Outage, "outage", cfg.Outage, "how long the service fails")
	flag.DurationVar(&cfg.Latency, "latency", cfg.Latency, "time to an answer")
	flag.IntVar(&cfg.Capacity, "capacity", cfg.Capacity, "calls per second the healthy service serves")
	flag.IntVar(&cfg.MaxAttempts, "attempts", cfg.MaxAttempts, "max attempts per request (0: until the deadline)")
	flag.DurationVar(&cfg.Deadline, "deadline", cfg.Deadline, "per-request deadline")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	graph := flag.Bool("graph", false, "print calls per second as a text graph")
	flag.Parse()

	if err := cfg.Validate(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d clients, 1 request per %v each; service down from %v to %v; capacity %d/s; %v answers; deadline %v, max attempts %d (0 = no limit)\n\n",
		cfg.Clients, cfg.Interval, cfg.Before, cfg.Before+cfg.Outage, cfg.Capacity, cfg.Latency, cfg.Deadline, cfg.MaxAttempts)
	var results []Result
	for _, s := range Strategies() {
		r, err := Simulate(cfg, s)
		if err != nil {
			log.Fatal(err)
		}
		results = append(results, r)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "strategy\tcalls\tretries\tcalls during outage\tpeak calls/s\tdrain\trequests\tsucceeded\tgave up\t")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d (t=%v)\t%v\t%d\t%d\t%d\t\n", r.Strategy, r.Attempts, r.Retries,
			r.OutageAttempts, r.Peak, r.PeakAt, r.Drain.Round(10*time.Millisecond), r.Requests, r.Succeeded, r.GaveUp)
	}
	w.Flush()
	jitter, budget := results[2], results[3]
	fmt.Printf("\nwith the retry budget: %.1f%% of the calls, %.1f%% of the retries, %.1f%% of the calls during the outage, of full jitter without it\n",
		pct(budget.Attempts, jitter.Attempts), pct(budget.Retries, jitter.Retries), pct(budget.OutageAttempts, jitter.OutageAttempts))

	if *graph {
		for _, r := range results {
			fmt.Printf("\n%s: calls per second\n", r.Strategy)
			scale := max(1, r.Peak/60)
			for sec, n := range r.PerSecond {
				fmt.Printf("%4ds %7d %s\n", sec, n, strings.Repeat("#", n/scale))
			}
		}
	}
}

func pct(a, b int) float64 { return 100 * float64(a) / float64(max(b, 1)) }
