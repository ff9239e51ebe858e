package workspace_test

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill cmd when this test binary dies (the go
// command kills it at its -timeout).
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
