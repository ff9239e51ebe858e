//go:build !unix

package keeltest

import "time"

// CPUTime is not measured here: benchmarks report 0 CPU.
func CPUTime() time.Duration { return 0 }

// SysTime is not measured here: 0.
func SysTime() time.Duration { return 0 }
