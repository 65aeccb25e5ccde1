//go:build linux && !amd64 && !386 && !s390x

package netns

import "syscall"

// sysSetns is setns(2).
const sysSetns = syscall.SYS_SETNS
