package bphttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/sluice-go/sluice/backpressure"
	"github.com/sluice-go/sluice/backpressure/bphttp"
)

func ExampleNew() {
	g, err := backpressure.NewGradient(backpressure.GradientConfig{})
	if err != nil {
		panic(err)
	}
	limiter, err := backpressure.New(backpressure.Config{
		Algorithm: g, Queue: 64, MaxWait: 50 * time.Millisecond,
		Reserve: backpressure.Reserve{Critical: 0.1},
	})
	if err != nil {
		panic(err)
	}
	mw, err := bphttp.New(bphttp.Config{
		Limiter: limiter,
		Class: func(r *http.Request) backpressure.Class {
			if strings.HasPrefix(r.URL.Path, "/batch/") {
				return backpressure.Sheddable
			}
			return backpressure.Default
		},
	})
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output: 200 hello
}
