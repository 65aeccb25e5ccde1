// Command chain measures backpressure that travels, over loopback HTTP: A,
// an open-loop load generator, offers 200 requests/s for 20 s to B, a
// sluice-limited server whose handler calls C once through sluice's client;
// C serves 50 requests/s (25/s from halfway), answering 429 with
// Retry-After and RateLimit fields beyond. B runs twice: with the link off
// (B admits everything its own rules allow, and its client absorbs C's
// pushback) and on (admit.Config.Dependencies: B admits what its
// client says C accepts, and answers the excess 503 at once). A first run
// with the link off and a client that only retries (no pacing) shows what
// C sees from a client that does not listen.
//
//	cd benchmarks && go run ./chain
//
// Everything listens on 127.0.0.1 and the run is bounded (about 70 s).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	offered := flag.Float64("rate", 200, "requests per second A offers")
	duration := flag.Duration("duration", 20*time.Second, "how long A offers them; C's capacity halves halfway")
	capacity := flag.Float64("capacity", 50, "requests per second C serves at first")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 3*(*duration)+30*time.Second)
	defer cancel()
	cfg := runConfig{Offered: *offered, Duration: *duration, Capacity: *capacity}
	var results []result
	for _, mode := range []struct{ link, unpaced bool }{{false, true}, {false, false}, {true, false}} {
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
