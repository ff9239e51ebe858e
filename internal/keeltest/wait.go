package keeltest

import (
	"errors"
	"testing"
	"time"
)

// WaitBound is how long Eventually waits before it fails a test. It is far
// above what any awaited event takes on an idle machine, so that load can
// slow a test but not fail it; a test that must show something happens
// quickly measures the time Eventually returns instead of shortening this.
const WaitBound = 2 * time.Minute

// Eventually calls check until it returns nil and returns how long that
// took. It polls at 1 ms, backing off to 50 ms, and fails t with what and
// check's last error when WaitBound passes first. It proves that something
// happens; that something does not happen is shown with a fake clock or a
// barrier, never by waiting.
func Eventually(t testing.TB, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	pause := time.Millisecond
	for {
		err := check()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > WaitBound {
			t.Fatalf("%s: not within %s: %v", what, WaitBound, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Until is Eventually for a condition that has no error to tell.
func Until(t testing.TB, what string, cond func() bool) time.Duration {
	t.Helper()
	return Eventually(t, what, func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	})
}
