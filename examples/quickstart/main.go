// Command quickstart is README's quick start: a hello server allowing each
// client IP 10 requests an hour, so that the limit can be watched by hand.
package main

import (
	"log"
	"net/http"

	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
)

func main() {
	log.Fatal(http.ListenAndServe("localhost:8080", newHandler()))
}

// newHandler says hello to each client IP up to 10 times an hour (a bucket
// of 10 that refills one every 6 minutes), kept in memory.
func newHandler() http.Handler {
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello\n"))
	})
	return sluicehttp.LimitByIP(core.PerHour(10))(hello)
}
