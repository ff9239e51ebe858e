// Package procstat reads the CPU times and memory of processes from Linux's
// /proc, for the load generators of the bench module (bench/vaultload,
// bench/floorbench), which measure a server running as a process of its
// own. /proc's CPU times are counted in clock ticks (USER_HZ, 100 on
// Linux: 10 ms), so a measured phase needs a few seconds to be precise.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of the CPU times of /proc/<pid>/stat and
// /proc/stat: USER_HZ, 100 on Linux.
const clockTick = 10 * time.Millisecond

// CPU returns the user and system CPU time of process pid (all its
// threads, the ended ones too).
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	d, err := parseStat(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return d, nil
}

// parseStat returns utime + stime of a /proc/<pid>/stat line. The command
// name, in parentheses, may hold spaces and parentheses: fields are
// counted from the last ')'; utime and stime are fields 14 and 15 of the
// line, the 12th and 13th after the name.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * clockTick, nil
}

// RSS returns the resident set size of process pid in MiB, 0 when unknown.
func RSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// Self returns this process's user and system CPU time, 0 when unknown.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MachineBusy returns the CPU time all cores spent on user, nice, system,
// irq and softirq work (the first line of /proc/stat), 0 when unknown.
func MachineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	return parseBusy(b)
}

func parseBusy(b []byte) time.Duration {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	var sum int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		if i < len(f) {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			sum += n
		}
	}
	return time.Duration(sum) * clockTick
}
