//go:build !linux

package redisstore

import "syscall"

// dieWithTest does nothing here: only Linux kills a child with its parent.
func dieWithTest(*syscall.SysProcAttr) {}
