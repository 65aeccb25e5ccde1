// Command edges shows, as a user meets them, the edges where a rate limiter
// must not fail silently: a Redis address that cannot be parsed, a Redis
// that cannot be reached, an outage with no failure mode chosen, a route
// rule installed before the router has routed, a cost a client chooses,
// and the fields of a request two rules decided. It needs no Redis: the
// addresses it dials have nothing listening.
//
//	go run ./examples/edges
package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

func main() {
	w := os.Stdout
	fmt.Fprintln(w, "1. a Redis address that cannot be parsed:")
	fmt.Fprintln(w, "  ", BadAddress("127.0.0.1:6450x"))

	fmt.Fprintln(w, "2. a Redis nothing answers at (no observer wired):")
	warns, ready := Unreachable(deadAddr())
	fmt.Fprintf(w, "   %d WARN line(s): %s\n   readiness: %v\n", len(warns), strings.TrimSpace(strings.Join(warns, "")), ready)

	fmt.Fprintln(w, "3. Redis gone, no failure mode chosen, a limit of 10 an hour:")
	passed, err := RedisGone(deadAddr(), 30)
	fmt.Fprintf(w, "   %d of 30 passed (err %v)\n", passed, err)

	fmt.Fprintln(w, "4. a POST /login rule installed with chi's r.Use, no router hint:")
	for _, line := range ChiUse() {
		fmt.Fprintln(w, "  ", line)
	}

	fmt.Fprintln(w, "5. a cost taken from a client's X-Tokens header:")
	for _, line := range ClientCost() {
		fmt.Fprintln(w, "  ", line)
	}

	fmt.Fprintln(w, "6. one request through two rules:")
	rl, policy := TwoRules()
	fmt.Fprintf(w, "   RateLimit: %s\n   RateLimit-Policy: %s\n", rl, policy)
}

func init() { goredis.SetLogger(quiet{}) } // go-redis's own dial errors: the store says what matters

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// deadAddr returns a loopback address nothing listens at.
func deadAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// BadAddress returns the error redisstore.New gives for a client of addr.
func BadAddress(addr string) error {
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	s, err := redisstore.New(c)
	if err == nil {
		s.Close()
	}
	return err
}

// Unreachable builds a store on a Redis nothing answers at, with slog's
// default logger writing to a buffer and no observer, and returns the WARN
// lines logged once the store has looked, and what its readiness check
// says (an error wanted).
func Unreachable(addr string) (warns []string, ready error) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	s, err := redisstore.New(c)
	if err != nil {
		return nil, err
	}
	r, ok := any(s).(interface{ Ready(context.Context) error })
	if ok {
		ready = r.Ready(context.Background()) // waits as long as the store's start check may
	} else {
		ready = fmt.Errorf("(no readiness check)")
		time.Sleep(2 * time.Second) // as long as a start check could take
	}
	s.Close()
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if strings.Contains(line, "level=WARN") {
			warns = append(warns, line)
		}
	}
	if ok && ready == nil {
		ready = fmt.Errorf("(ready, though nothing answers)")
	} else if ok {
		return warns, ready
	}
	return warns, nil
}

// RedisGone sends n requests from one client through a limit of 10 an hour
// kept in a Redis nothing answers at, with no failure mode chosen, and
// returns how many passed.
func RedisGone(addr string, n int) (int, error) {
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	defer slog.SetDefault(old)
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	store, err := redisstore.New(c)
	if err != nil {
		return 0, err
	}
	defer store.Close()
	limiter, err := core.NewLimiter(store)
	if err != nil {
		return 0, err
	}
	mw, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{{Policy: core.PerHour(10), Key: admit.ClientIP()}}})
	if err != nil {
		return 0, err
	}
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	passed := 0
	for range n {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code == http.StatusOK {
			passed++
		}
	}
	return passed, nil
}

// newLimiter returns a limiter on a memory store.
func newLimiter() *core.Limiter {
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	l, err := core.NewLimiter(store)
	if err != nil {
		panic(err)
	}
	return l
}

// do sends one request to h and returns its status and RateLimit field.
func do(h http.Handler, method, path string, header ...string) (int, string) {
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("RateLimit")
}

// ChiUse installs a limit of 3 logins a minute on "POST /login" with chi's
// r.Use, no router hint, and sends five logins and a GET /: the statuses.
func ChiUse() []string {
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.GCRA, Quota: 3, Period: time.Minute, Burst: 3})
	mw, err := sluicehttp.New(admit.Config{Limiter: newLimiter(), Rules: []admit.Rule{
		{Policy: login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
	}})
	if err != nil {
		return []string{"New: " + err.Error()}
	}
	r := chi.NewRouter()
	r.Use(mw)
	r.Post("/login", func(http.ResponseWriter, *http.Request) {})
	r.Get("/", func(http.ResponseWriter, *http.Request) {})
	var out []string
	for i := range 5 {
		code, rl := do(r, http.MethodPost, "/login")
		out = append(out, fmt.Sprintf("POST /login #%d: %d %s", i+1, code, rl))
	}
	code, rl := do(r, http.MethodGet, "/")
	return append(out, fmt.Sprintf("GET /: %d %s", code, rl))
}

// ClientCost limits each client to 10 tokens a minute, the cost read from
// the X-Tokens header as a float (as a token count might be), and sends
// hostile values, then 10 tokens, then "0" again: the statuses.
func ClientCost() []string {
	tokens := core.MustPolicy(core.PolicyConfig{Name: "tokens", Algorithm: core.TokenBucket, Quota: 10, Period: time.Minute, Burst: 10})
	mw, err := sluicehttp.New(admit.Config{Limiter: newLimiter(), Rules: []admit.Rule{{
		Policy: tokens, Key: admit.ClientIP(),
		Cost: func(r *admit.Request) int64 {
			f, _ := strconv.ParseFloat(r.Header("X-Tokens"), 64)
			return int64(f)
		},
	}}})
	if err != nil {
		return []string{"New: " + err.Error()}
	}
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	var out []string
	for _, v := range []string{"0", "-3", "NaN", "10", "0", "1"} {
		code, rl := do(h, http.MethodPost, "/v1/complete", "X-Tokens", v)
		out = append(out, fmt.Sprintf("X-Tokens: %-4s -> %d %s", v, code, rl))
	}
	return out
}

// TwoRules sends one request through a per-IP rule and a per-route one:
// its RateLimit and RateLimit-Policy fields.
func TwoRules() (rateLimit, policy string) {
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 100, Period: time.Minute, Burst: 100})
	search := core.MustPolicy(core.PolicyConfig{Name: "search", Algorithm: core.GCRA, Quota: 10, Period: time.Minute, Burst: 10})
	mw, err := sluicehttp.New(admit.Config{Limiter: newLimiter(), Rules: []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP()},
		{Policy: search, Key: admit.ClientIP(), Routes: []string{"GET /v1/search"}},
	}})
	if err != nil {
		return "New: " + err.Error(), ""
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/search", func(http.ResponseWriter, *http.Request) {})
	rec := httptest.NewRecorder()
	mw(mux).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/search", nil))
	return rec.Header().Get("RateLimit"), rec.Header().Get("RateLimit-Policy")
}
