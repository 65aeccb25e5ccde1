// Command client sends requests through sluice's client transport and shows
// what it does: every retry with its reason and delay, every pacing wait,
// every give-up and every circuit-breaker state change.
//
// Start the nethttp example server, then:
//
//	go run ./examples/client -url http://localhost:8080/ -n 30
//
// Against the example server (a bucket of 10 refilled at 2 per second) the
// requests go at its sustained rate, one every 500ms, read from its
// RateLimit-Policy, instead of ten back to back and a wait for the bucket
// to fill. Against a server whose 429s carry no rate-limit fields, the
// transport learns a rate from the 429s. Stop the server mid-run to watch
// the breaker open and fail calls at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/sluice-go/sluice/client"
	"github.com/sluice-go/sluice/fields"
)

func main() {
	target := flag.String("url", "http://localhost:8080/", "URL to request")
	n := flag.Int("n", 30, "number of requests")
	conc := flag.Int("c", 1, "concurrent requests")
	attempts := flag.Int("attempts", client.DefaultMaxAttempts, "max attempts per request")
	timeout := flag.Duration("timeout", 30*time.Second, "timeout per request, retries and waits included")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *target, *n, *conc, *attempts, *timeout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, target string, n, conc, attempts int, timeout time.Duration) error {
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("-url %q: want an absolute http or https URL", target)
	}
	if n < 0 {
		return fmt.Errorf("-n %d: negative", n)
	}
	if conc < 1 {
		return fmt.Errorf("-c %d: at least one request at a time", conc)
	}
	if timeout < 0 {
		return fmt.Errorf("-timeout %v: negative (0 means none)", timeout)
	}
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Printf("%8.3fs  "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}
	tr, err := client.NewTransport(nil,
		client.WithMaxAttempts(attempts),
		client.WithBreaker(client.BreakerConfig{
			OnStateChange: func(host string, from, to client.BreakerState) {
				logf("breaker %s: %s -> %s", host, from, to)
			},
		}),
		client.WithHooks(client.Hooks{
			OnRetry: func(e client.RetryEvent) {
				ra := ""
				if e.RetryAfter > 0 {
					ra = fmt.Sprintf(" (Retry-After %v)", e.RetryAfter)
				}
				logf("  attempt %d: %s%s; retrying in %v", e.Attempt, e.Reason, ra, e.Delay.Round(time.Millisecond))
			},
			OnGiveUp: func(e client.GiveUpEvent) {
				logf("  attempt %d: %s; giving up: %v", e.Attempt, e.Reason, e.Cause)
			},
			OnPace: func(e client.PaceEvent) {
				wait := e.Delay.Round(time.Millisecond)
				switch {
				case e.Reason == client.PaceLearnedRate:
					logf("  pacing: %.2f requests/s, learned from 429s; waiting %v", e.Rate, wait)
				case e.Reason == client.PaceRetryAfter:
					logf("  pacing: the host said Retry-After; waiting %v", wait)
				case e.Rate > 0:
					logf("  pacing: %s at %.2f requests/s, %d left; waiting %v", policyName(e.Policy), e.Rate, e.Remaining, wait)
				default:
					logf("  pacing: %s has none left, more in %v; waiting %v", policyName(e.Policy), e.Reset.Round(time.Millisecond), wait)
				}
			},
		}),
	)
	if err != nil {
		return err // a bad -attempts, for one
	}
	hc := &http.Client{Transport: tr, Timeout: timeout}
	defer hc.CloseIdleConnections()

	var wg sync.WaitGroup
	work := make(chan int)
	for range conc {
		wg.Go(func() {
			for i := range work {
				logf("request %d: %s", i, fetch(ctx, hc, target))
			}
		})
	}
feed:
	for i := 1; i <= n; i++ {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return nil
}

// policyName names a policy in the log; the older header fields have no
// names.
func policyName(name string) string {
	if name == "" {
		return "quota"
	}
	return name
}

// fetch makes one request and describes its outcome.
func fetch(ctx context.Context, hc *http.Client, target string) string {
	t0 := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := hc.Do(req)
	took := time.Since(t0).Round(time.Millisecond)
	if err != nil {
		var open *client.CircuitOpenError
		if errors.As(err, &open) {
			return fmt.Sprintf("circuit open, failed in %v without a call", time.Since(t0))
		}
		return fmt.Sprintf("error after %v: %v", took, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	standing := ""
	for _, q := range fields.Parse(resp.Header, time.Now()) {
		standing += fmt.Sprintf(" [%s %d/%d left, reset %v]", q.Policy, q.Remaining, q.Limit, q.Reset)
	}
	return fmt.Sprintf("%s in %v%s", resp.Status, took, standing)
}
