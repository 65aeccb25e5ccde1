// Command chain measures backpressure that travels, over loopback HTTP: A,
// an open-loop load generator whose requests give up after a timeout,
// offers 200 requests/s to B, a sluice-limited server whose handler calls
// C once through sluice's client; C is a token bucket of 50 requests/s,
// then 25/s, then 50/s again, answering 429 with Retry-After and RateLimit
// fields beyond. B runs three times: with a client that only retries (no
// pacing), with the default client, and with the link on
// (admit.Config.Dependencies: B admits what its client says C accepts,
// and answers the excess 503 at once).
//
//	cd benchmarks && go run ./chain
//
// Everything listens on 127.0.0.1 and the run is bounded (about 100 s).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	offered := flag.Float64("rate", 200, "requests per second A offers")
	duration := flag.Duration("duration", 30*time.Second, "how long A offers them, split evenly among the phases")
	phases := flag.String("phases", "50,25,50", "C's capacity in each phase, requests per second")
	timeout := flag.Duration("timeout", 2*time.Second, "how long A waits for an answer")
	only := flag.String("only", "", "run one of: unpaced, default, link")
	flag.Parse()
	cfg := runConfig{Offered: *offered, Duration: *duration, Timeout: *timeout}
	for _, f := range strings.Split(*phases, ",") {
		c, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || c <= 0 {
			fmt.Fprintf(os.Stderr, "chain: bad -phases %q\n", *phases)
			os.Exit(2)
		}
		cfg.Phases = append(cfg.Phases, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*(*duration)+60*time.Second)
	defer cancel()
	var results []result
	for _, mode := range []struct {
		name          string
		link, unpaced bool
	}{{"unpaced", false, true}, {"default", false, false}, {"link", true, false}} {
		if *only != "" && *only != mode.name {
			continue
		}
		cfg.Link, cfg.Unpaced = mode.link, mode.unpaced
		r, err := run(ctx, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chain:", err)
			os.Exit(1)
		}
		results = append(results, r)
	}
	printTable(os.Stdout, cfg, results)
}
