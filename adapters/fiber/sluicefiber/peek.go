package sluicefiber

import (
	"unsafe"

	"github.com/valyala/fasthttp"
)

// peek returns a view of the value of the response field named key, whose
// name is canonical, "" if it has none: what h.Peek(key) returns, without
// h.Peek's copy and normalisation of the name, which cost more than the
// scan of the few fields a response has when a limiter runs
// (BenchmarkPeek). fasthttp stores a name as the handler's Set normalised
// it, so a canonical name matches as Peek would match it; TestPeekIsPeek
// holds the two to each other.
func peek(h *fasthttp.ResponseHeader, key string) string {
	for k, v := range h.All() {
		if string(k) == key {
			return unsafe.String(unsafe.SliceData(v), len(v))
		}
	}
	return ""
}
