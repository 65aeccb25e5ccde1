package sluicegrpc

import (
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// PushbackKey is the trailer metadata key of gRPC's server push-back (the
// retry design, gRFC A6): the milliseconds a client's retry policy waits
// before its next attempt.
const PushbackKey = "grpc-retry-pushback-ms"

// Code returns the gRPC code of an HTTP-equivalent status, as the engine
// answers (429, 503, 500) and Config.Deny may choose: the mapping gRPC's
// HTTP gateways use.
func Code(httpStatus int) codes.Code {
	switch httpStatus {
	case 200:
		return codes.OK
	case 400:
		return codes.InvalidArgument
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.NotFound
	case 409:
		return codes.Aborted
	case 429:
		return codes.ResourceExhausted
	case 499:
		return codes.Canceled
	case 500:
		return codes.Internal
	case 501:
		return codes.Unimplemented
	case 503:
		return codes.Unavailable
	case 504:
		return codes.DeadlineExceeded
	}
	return codes.Unknown
}

// HTTPStatus returns the HTTP-equivalent status of a gRPC code, which a
// Settlement is settled with (Rule.Charge, a concurrency limit's outcome):
// the inverse of Code, Unknown and DataLoss as 500.
func HTTPStatus(c codes.Code) int {
	switch c {
	case codes.OK:
		return 200
	case codes.Canceled:
		return 499
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return 400
	case codes.DeadlineExceeded:
		return 504
	case codes.NotFound:
		return 404
	case codes.AlreadyExists, codes.Aborted:
		return 409
	case codes.PermissionDenied:
		return 403
	case codes.ResourceExhausted:
		return 429
	case codes.Unimplemented:
		return 501
	case codes.Unavailable:
		return 503
	case codes.Unauthenticated:
		return 401
	}
	return 500
}

// refusal returns the error of a call or message c's decision refused: its
// status's code, a message, and for a refusal with Retry-After, a RetryInfo
// detail with the delay. Refusals without a body of their own are built once
// per code and delay, and shared.
func (l *limit) refusal(c *call, retry time.Duration) error {
	code := Code(c.status)
	if len(c.body) > 0 && utf8.Valid(c.body) {
		return newRefusal(code, string(c.body), retry)
	}
	secs := int64(retry / time.Second)
	if retry%time.Second != 0 || secs < 0 || secs >= int64(len(l.refusals[0])) {
		return newRefusal(code, message(code, secs), retry)
	}
	slot := refusalSlot(code)
	if slot < 0 {
		return newRefusal(code, message(code, secs), retry)
	}
	p := &l.refusals[slot][secs]
	if err := p.Load(); err != nil {
		return *err
	}
	err := newRefusal(code, message(code, secs), retry)
	p.Store(&err)
	return err
}

func refusalSlot(code codes.Code) int {
	switch code {
	case codes.ResourceExhausted:
		return 0
	case codes.Unavailable:
		return 1
	case codes.Internal:
		return 2
	}
	return -1
}

// message is a refusal's status message.
func message(code codes.Code, secs int64) string {
	var m string
	switch code {
	case codes.ResourceExhausted:
		m = "sluice: rate limit exceeded"
	case codes.Unavailable:
		m = "sluice: service unavailable"
	case codes.Internal:
		return "sluice: the call could not be checked against its rate limits"
	default:
		m = "sluice: refused"
	}
	if secs <= 0 {
		return m
	}
	if secs == 1 {
		return m + "; retry after 1 second"
	}
	return m + "; retry after " + strconv.FormatInt(secs, 10) + " seconds"
}

// newRefusal builds a refusal's status error.
func newRefusal(code codes.Code, msg string, retry time.Duration) error {
	st := status.New(code, msg)
	if retry > 0 {
		if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retry)}); err == nil {
			st = d
		}
	}
	return st.Err()
}
