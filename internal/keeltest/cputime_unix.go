//go:build unix

package keeltest

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user and system) the process has used, so
// that a benchmark on a busy machine reports what an operation costs
// besides what it waited.
func CPUTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// SysTime returns the system part of CPUTime: the kernel's work for the
// process (a file's writes and syncs).
func SysTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Stime.Nano())
}
