package redisstore

import "syscall"

// dieWithTest has the process started with a killed when the test process
// dies.
func dieWithTest(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
