package tfeharness

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill cmd's process when this test
// process dies, so that a killed test run leaves no server behind.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
