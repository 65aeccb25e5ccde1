// Package surface holds sluice's server-side surface to a size a user can
// hold: its test counts the exported top-level names (constants, variables,
// functions and types; not methods or fields) of what a server-side user
// touches, core, store/memory, adapters/httplimit and one adapter
// (adapters/nethttp/sluicehttp), and fails past the budget.
//
//	go test -v -run TestServerSurface ./core/internal/surface
package surface
