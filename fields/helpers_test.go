package fields

import (
	"net/http"
	"strconv"
	"time"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
