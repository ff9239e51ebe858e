//go:build race

package audit

// raceEnabled: the race detector's sync.Pool drops values at random, so
// that allocation counts are not asserted.
const raceEnabled = true
