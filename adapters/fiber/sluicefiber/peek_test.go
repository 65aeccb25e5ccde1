package sluicefiber

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/valyala/fasthttp"
)

// TestPeekIsPeek holds Peek to fasthttp's own, for fields set every way a
// handler or sluice sets them.
func TestPeekIsPeek(t *testing.T) {
	var h fasthttp.ResponseHeader
	h.Set("x-other", "1")
	h.Set("ratelimit", `"a";r=1;t=2`) // normalised by Set
	h.SetCanonical([]byte("Ratelimit-Policy"), []byte(`"a";q=1;w=2`))
	h.Add("Retry-After", "3")
	h.Add("Retry-After", "4")
	h.SetContentType("application/problem+json")
	h.SetCookie(cookie("c", "v"))
	for _, key := range []string{"Ratelimit", "Ratelimit-Policy", "Retry-After", "X-Other", "Content-Type", "Ratelimit-Remaining", "Missing"} {
		assert.Equal(t, string(h.Peek(key)), peek(&h, key), key)
	}
	assert.Equal(t, "", peek(&fasthttp.ResponseHeader{}, "Ratelimit"))
}

func cookie(k, v string) *fasthttp.Cookie {
	c := fasthttp.AcquireCookie()
	c.SetKey(k)
	c.SetValue(v)
	return c
}

func BenchmarkPeek(b *testing.B) {
	var h fasthttp.ResponseHeader
	h.Set("X-Request-Id", "abc")
	b.Run("peek", func(b *testing.B) {
		for b.Loop() {
			peek(&h, "Ratelimit-Policy")
		}
	})
	b.Run("fasthttp", func(b *testing.B) {
		for b.Loop() {
			h.Peek("Ratelimit-Policy")
		}
	})
}
