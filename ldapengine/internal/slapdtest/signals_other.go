//go:build !unix

package slapdtest

import "os"

// Pause and Resume need job-control signals, which only Unix has: here
// they fail (slapd runs only on Debian anyway).
var (
	sigStop os.Signal = unsupportedSignal("SIGSTOP")
	sigCont os.Signal = unsupportedSignal("SIGCONT")
)

type unsupportedSignal string

func (s unsupportedSignal) String() string { return string(s) }
func (unsupportedSignal) Signal()          {}
