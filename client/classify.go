package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
)

// transientReason reports whether a transport error is transient (worth a
// retry, and a failure in the breaker's eyes) and names it. Transient are
// timeouts, connection resets and refusals, and connections closed before
// an answer; a request the caller cancelled is not, and neither are errors
// that will repeat identically (bad URL, TLS verification, DNS "no such
// host").
func transientReason(err error) (string, bool) {
	if err == nil || errors.Is(err, context.Canceled) {
		return "", false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "dns error", dnsErr.IsTimeout || dnsErr.IsTemporary
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout", true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return "connection reset", true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed", true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return "dial error", true // unreachable host or network
	}
	return "", false
}

// isServerFailure reports whether a status is a failure in the breaker's
// eyes: a 5xx, except those that describe the request rather than the
// server's health (501 Not Implemented, 505 HTTP Version Not Supported,
// 511 Network Authentication Required).
func isServerFailure(code int) bool {
	switch code {
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported, http.StatusNetworkAuthenticationRequired:
		return false
	}
	return code >= 500 && code <= 599
}

// statusReason is "429 Too Many Requests".
func statusReason(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

// statusSet is a set of HTTP status codes 100-599.
type statusSet [10]uint64

func (s *statusSet) add(code int) {
	if code >= 0 && code < 640 {
		s[code/64] |= 1 << (code % 64)
	}
}

func (s *statusSet) has(code int) bool {
	return code >= 0 && code < 640 && s[code/64]&(1<<(code%64)) != 0
}
