package procstat

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCountsFromTheLastParenthesis(t *testing.T) {
	line := []byte("4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 123 0 0\n")
	got, err := parseStat(line)
	if err != nil || got != 3250*time.Millisecond {
		t.Errorf("parseStat = %v, %v; want 3.25s (250 + 75 ticks)", got, err)
	}
	for _, bad := range []string{"4242 no name", "4242 (x) S 1 2"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q): no error", bad)
		}
	}
}

func TestParseBusySumsUserNiceSystemIrqSoftirq(t *testing.T) {
	b := []byte("cpu  100 20 30 9999 8888 4 5 0 0 0\ncpu0 1 2 3 4 5 6 7\n")
	if got := parseBusy(b); got != 159*clockTick {
		t.Errorf("parseBusy = %v, want %v", got, 159*clockTick)
	}
}

func TestThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := CPU(os.Getpid()); err != nil {
		t.Error(err)
	}
	if RSS(os.Getpid()) <= 0 {
		t.Error("RSS of this process: 0")
	}
	if MachineBusy() <= 0 {
		t.Error("MachineBusy: 0")
	}
	if _, err := CPU(-1); err == nil {
		t.Error("CPU of pid -1: no error")
	}
}
