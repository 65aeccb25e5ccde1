// Command quickstart is README's quick start: a hello server allowing each
// client IP 10 requests an hour, so that the limit can be watched by hand.
//
//	go run ./examples/quickstart [-addr localhost:8080]
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
)

func main() {
	addr := flag.String("addr", "localhost:8080", "address to listen on")
	flag.Parse()
	log.Fatal(http.ListenAndServe(*addr, newHandler()))
}

// newHandler says hello to each client IP up to 10 times an hour (a bucket
// of 10 that refills one every 6 minutes), kept in memory.
func newHandler() http.Handler {
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello\n"))
	})
	return sluicehttp.LimitByIP(core.PerHour(10))(hello)
}
