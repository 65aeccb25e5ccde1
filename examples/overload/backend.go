package main

import (
	"context"
	"io"
	"net/http"
	"time"
)

// backend is the simulated service: a request takes one of its workers for
// the service time, and waits for one while all are busy, as requests wait
// for a real service's threads or database connections. Its latency grows
// with the requests it holds beyond its workers: what a concurrency limit
// must notice.
type backend struct {
	workers chan struct{} // a token per busy worker; the tokens halve holds stand for workers gone
	service time.Duration
}

func newBackend(workers int, service time.Duration) *backend {
	return &backend{workers: make(chan struct{}, workers), service: service}
}

// ServeHTTP serves a request: "ok" once a worker has spent the service time
// on it; 504 if its context ends first (its client is gone, and the answer
// goes nowhere).
func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := b.work(r.Context()); err != nil {
		w.WriteHeader(http.StatusGatewayTimeout)
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

func (b *backend) work(ctx context.Context) error {
	select {
	case b.workers <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.workers }()
	t := time.NewTimer(b.service)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// halve takes half the workers away for good, as an instance lost or a
// dependency slowed down would, once each has finished its request.
func (b *backend) halve() {
	go func() {
		for range cap(b.workers) / 2 {
			b.workers <- struct{}{}
		}
	}()
}
