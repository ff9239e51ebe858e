package etcdtest

import "syscall"

// platformErr is why StartCluster cannot run here: nil on Linux.
var platformErr error

// The signals of Member.Stop and Member.Continue.
var stopSignal, contSignal = syscall.SIGSTOP, syscall.SIGCONT

// sysProcAttr has the kernel kill a member when the thread that started it
// exits, so that no etcd outlives a test binary that dies without running
// its cleanups. (The Go runtime ends a thread only when a goroutine exits
// locked to it, which tests do not do.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
