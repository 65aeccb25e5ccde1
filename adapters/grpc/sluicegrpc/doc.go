// Package sluicegrpc is sluice's gRPC server and client interceptors.
package sluicegrpc
