package sluicehttp_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core/backpressure"
)

// A real server whose handlers panic, run past their clients' timeouts and
// see their clients go, behind a concurrency limit with a queue: every slot
// and every place in the queue comes back. (The timeouts are the clients';
// nothing is measured.)
func TestSlotsNeverLeakOverTheWire(t *testing.T) {
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(4), Queue: 4, MaxWait: 20 * time.Millisecond})
	require.NoError(t, err)
	mw, err := sluicehttp.New(admit.Config{Concurrency: slots})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("handler bug")
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		_, _ = io.WriteString(w, "ok")
	})))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	client := srv.Client()
	var wg sync.WaitGroup
	for i := range 120 {
		wg.Go(func() {
			path := []string{"/panic", "/slow", "/fast"}[i%3]
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+i%20)*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
			resp, err := client.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			} else if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, io.EOF) {
				t.Log(err) // panics close the connection
			}
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool { return slots.InFlight() == 0 && slots.Waiting() == 0 }, 10*time.Second, time.Millisecond)
	client.CloseIdleConnections()
}
