package main

import "syscall"

// childAttr makes the kernel kill a child server when the test process
// dies, so that no server outlives a crashed test.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
