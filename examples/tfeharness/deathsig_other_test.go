//go:build !linux

package tfeharness

import "os/exec"

// setDeathSignal does nothing outside Linux: a killed test run may leave
// its server running there.
func setDeathSignal(*exec.Cmd) {}
