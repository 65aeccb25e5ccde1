package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/examples/internal/demo/demotest"
)

// The app answers through app.Test, whose peer is always 0.0.0.0: one client.
func TestDemo(t *testing.T) {
	demotest.Run(t, newLimiter, func(t *testing.T, l *core.Limiter) demotest.Client {
		app, err := newApp(l)
		require.NoError(t, err)
		return func(method, path string) (int, http.Header) {
			resp, err := app.Test(httptest.NewRequest(method, path, nil), fiber.TestConfig{Timeout: 0}) // no time limit, which a busy machine may pass
			require.NoError(t, err)
			_ = resp.Body.Close()
			return resp.StatusCode, resp.Header
		}
	})
}
