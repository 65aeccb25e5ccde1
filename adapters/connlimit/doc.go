// Package connlimit limits long-lived connections (server-sent events,
// WebSocket, long polls) whatever library serves them: a Rate bounds the
// messages a client sends over one connection, and a Liveness ends a
// connection that misses its keepalive, so that the concurrency slot it
// holds (admit.Config.Concurrency, taken for the connection's whole life
// and given back when its handler returns) comes back within one interval
// however the client went.
//
// A WebSocket read loop waits for each message's turn, or drops what
// comes too fast:
//
//	rate, err := connlimit.NewRate(perConn, clock) // e.g. 20 messages/s
//	for {
//		msg, err := read(ctx) // coder/websocket, gorilla/websocket...
//		if err != nil {
//			return
//		}
//		if err := rate.Wait(ctx); err != nil {
//			return
//		}
//		handle(msg)
//	}
//
// docs/streaming.md shows both with server-sent events and WebSockets.
package connlimit
