package fields_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sluice-go/sluice/fields"
)

func ExampleParseRetryAfter() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Sun, 01 Mar 2026 12:00:30 GMT", "soon"} {
		d, ok := fields.ParseRetryAfter(v, now)
		fmt.Println(d, ok)
	}
	// Output:
	// 2m0s true
	// 30s true
	// 0s false
}

func ExampleParse() {
	h := http.Header{}
	h.Set("RateLimit-Policy", `"per-ip";q=100;w=60, "login";q=5;w=300`)
	h.Set("RateLimit", `"per-ip";r=42;t=17, "login";r=1;t=250`)
	for _, q := range fields.Parse(h, time.Now()) {
		fmt.Printf("%s: %d of %d left, more in %s\n", q.Policy, q.Remaining, q.Limit, q.Reset)
	}
	// Output:
	// per-ip: 42 of 100 left, more in 17s
	// login: 1 of 5 left, more in 4m10s
}
