package main

import (
	"strings"
	"testing"
)

// The example's clients see each limit.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	want := `free-key OK OK OK ResourceExhausted(retry in 20s, push-back 20000ms)
pro-key  OK OK OK OK
per-peer: 22 calls, 2 refused
stream: message 6 ResourceExhausted(retry in 12s, push-back 12000ms)
concurrency: a third call Unavailable(retry in 1s, push-back 1000ms)
concurrency: once one ended OK
retry: OK, after the push-back: true
`
	if got := out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
