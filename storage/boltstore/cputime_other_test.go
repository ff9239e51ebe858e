//go:build !unix

package boltstore

import "time"

// cpuTime is not measured here: the benchmarks report 0 CPU.
func cpuTime() time.Duration { return 0 }

// sysTime is not measured here: 0.
func sysTime() time.Duration { return 0 }
