//go:build !linux

package slapdtest

import "os/exec"

// dieWithParent does nothing where the kernel cannot kill a child with its
// parent; Close stops slapd in a test's cleanup.
func dieWithParent(*exec.Cmd) {}
