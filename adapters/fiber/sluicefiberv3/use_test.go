package sluicefiberv3

import (
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// appRoutes tells app.Use's routes (the app's and a group's) from the
// routes of the app's own handlers, route-level middleware included, and
// learns the routes added after its first look.
func TestAppRoutesTellsUseRoutes(t *testing.T) {
	app := fiber.New()
	var routes appRoutes
	seen := map[string]bool{}
	probe := func(name string) fiber.Handler {
		return func(c fiber.Ctx) error {
			seen[name] = routes.isUse(c.App(), c.Route())
			return c.Next()
		}
	}
	ok := func(c fiber.Ctx) error { return c.SendString("ok") }
	app.Use(probe("use"))
	app.Get("/items/:id", probe("route"), ok)
	api := app.Group("/api", probe("group"))
	api.Post("/login", probe("group route"), ok)
	for _, req := range [][2]string{{"GET", "/items/7"}, {"POST", "/api/login"}} {
		resp, err := app.Test(httptest.NewRequest(req[0], req[1], nil))
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
	}
	assert.Equal(t, map[string]bool{"use": true, "route": false, "group": true, "group route": false}, seen)

	app.Get("/late", probe("late"), ok)
	_, err := app.Test(httptest.NewRequest("GET", "/late", nil))
	require.NoError(t, err)
	assert.False(t, seen["late"], "a route added after the first look")
}
