// Package grpcoverhead measures what sluicegrpc's interceptors cost a
// gRPC server, per call and per stream message, against grpc-go with no
// interceptor and against go-grpc-middleware's ratelimit interceptor over
// x/time/rate, in interleaved rounds: go test -run TestOverheadTable -v
// (SLUICE_OVERHEAD=1) prints the table.
package grpcoverhead
