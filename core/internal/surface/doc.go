// Package surface holds sluice's server-side surface to a size a user can
// hold: its test counts the exported identifiers (top-level names, methods
// of exported types, fields of exported structs) of the packages a net/http
// server goes through, core, store/memory, adapters/admit,
// adapters/httplimit and adapters/nethttp/sluicehttp, and fails past the
// budget.
//
//	go test -v -run TestServerSurface ./core/internal/surface
package surface
