package slapdtest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd when the test process dies, so
// that a test binary killed by a timeout or a signal leaves no slapd
// behind. (Linux sends the signal when the thread that started cmd ends;
// Go's runtime keeps its threads for the life of the process.)
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
