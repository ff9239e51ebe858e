package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/keelhq/keel/storage"
)

// increment adds one to the decimal counter at key, 0 when missing.
func increment(tx storage.Tx, key string) (int, error) {
	n := 0
	v, err := tx.Get(key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return 0, fmt.Errorf("Get(%q): %w", key, err)
	default:
		if n, err = strconv.Atoi(string(v)); err != nil {
			return 0, fmt.Errorf("counter %q holds %q: %w", key, v, err)
		}
	}
	n++
	return n, tx.Put(key, []byte(strconv.Itoa(n)))
}

// parallel runs f(0) to f(n-1) in goroutines and waits for them, at most
// waitLimit. The errors f returns fail t.
func parallel(t testing.TB, what string, n int, f func(i int) error) {
	t.Helper()
	errs := make([]error, n)
	if !within(func() {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = f(i) })
		}
		wg.Wait()
	}) {
		t.Fatalf("%s did not finish within %v: deadlock?", what, waitLimit)
	}
	if err := errors.Join(errs...); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// testConcurrentWriters: concurrent Updates lose no update.
func testConcurrentWriters(t *testing.T, s storage.Store) {
	const goroutines, increments = 8, 25

	// One counter, read and written by every Update.
	parallel(t, "concurrent increments", goroutines, func(int) error {
		for range increments {
			err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				_, err := increment(tx, "ctr")
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	wantValue(t, s, "ctr", strconv.Itoa(goroutines*increments))

	// Disjoint keys, with Views running alongside.
	parallel(t, "concurrent writers of disjoint keys", goroutines, func(g int) error {
		for i := range increments {
			key := fmt.Sprintf("w/%d/%02d", g, i)
			err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				return tx.Put(key, []byte(key))
			})
			if err != nil {
				return err
			}
			err = s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				v, err := tx.Get(key)
				if err == nil && string(v) != key {
					err = fmt.Errorf("Get(%q) = %q right after it was committed", key, v)
				}
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	got := scanAll(t, s, "w/", storage.ScanOptions{})
	if len(got) != goroutines*increments {
		t.Errorf("after %d concurrent Puts of distinct keys, Scan found %d", goroutines*increments, len(got))
	}
	for _, e := range got {
		if e.key != e.value {
			t.Errorf("concurrent Puts: %v, want the key as value", e)
		}
	}
}

// testRetrySafe: the closure given to Update may run more than once (a
// store may retry it after a conflict, or run it again when another closure
// of the same group commit failed). A closure that keeps its state in local
// variables, reset on each run, and decides only on what it reads through
// tx has exactly one effect however often it runs; this case checks that
// the store gives each run a consistent state to read.
func testRetrySafe(t *testing.T, s storage.Store) {
	putAll(t, s, kv{"rs/k", "10"}, kv{"rs/twin", "10"})

	// readPair reads the counter and its twin, always written together.
	readPair := func(tx storage.Tx) (int, error) {
		var n [2]int
		for i, key := range []string{"rs/k", "rs/twin"} {
			v, err := tx.Get(key)
			if err != nil {
				return 0, fmt.Errorf("Get(%q): %w", key, err)
			}
			if n[i], err = strconv.Atoi(string(v)); err != nil {
				return 0, err
			}
		}
		if n[0] != n[1] {
			return 0, fmt.Errorf("inconsistent state: rs/k = %d, rs/twin = %d", n[0], n[1])
		}
		return n[0], nil
	}
	bump := func(tx storage.Tx) error {
		n, err := readPair(tx)
		if err != nil {
			return err
		}
		for _, key := range []string{"rs/k", "rs/twin"} {
			if err := tx.Put(key, []byte(strconv.Itoa(n+1))); err != nil {
				return err
			}
		}
		// Read back: the state this run sees stays consistent.
		if m, err := readPair(tx); err != nil || m != n+1 {
			return fmt.Errorf("after writing %d: read %d, %v", n+1, m, err)
		}
		return nil
	}

	// One Update, alone.
	runs := 0
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		runs++
		return bump(tx)
	})
	if runs < 1 {
		t.Fatalf("Update returned nil without running its closure")
	}
	wantValue(t, s, "rs/k", "11")
	wantValue(t, s, "rs/twin", "11")

	// Concurrent Updates, which a store may group or retry.
	const goroutines = 8
	var total atomic.Int64
	parallel(t, "concurrent retry-safe Updates", goroutines, func(int) error {
		runs := 0 // this goroutine's runs of its closure
		err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			runs++
			return bump(tx)
		})
		total.Add(int64(runs))
		if err == nil && runs < 1 {
			err = errors.New("the Update returned nil without running its closure")
		}
		return err
	})
	t.Logf("%d concurrent Updates ran their closures %d times", goroutines, total.Load())
	want := strconv.Itoa(11 + goroutines)
	wantValue(t, s, "rs/k", want)
	wantValue(t, s, "rs/twin", want)
}

// testFailingWriter: among concurrent Updates, one whose closure fails
// neither fails the others nor commits any of its own writes, whether it
// fails before writing or after, and gets its own error back. A store that
// groups the closures of concurrent Updates into one commit (boltstore) or
// runs them again after a conflict (etcdstore) must take the failing one
// out of the group and commit the rest, none of which may have built on
// what it wrote.
func testFailingWriter(t *testing.T, s storage.Store) {
	const goroutines, rounds = 8, 6
	putAll(t, s, kv{"fw/keep", "k"})
	var runs atomic.Int64
	counted := 0 // the increments of fw/ctr expected
	for r := range rounds {
		failing := (3*r + 1) % goroutines // a different writer each round
		late := r%2 == 0                  // fails after writing, or before
		errFail := fmt.Errorf("writer %d of round %d fails: %w", failing, r, errTest)
		key := func(g int) string { return fmt.Sprintf("fw/%d/%d", r, g) }
		// Even writers increment the shared counter, odd ones write only
		// their own key: some conflict, some do not.
		counts := func(g int) bool { return g%2 == 0 }
		var ready sync.WaitGroup // a barrier, so that the Updates arrive together
		ready.Add(goroutines)
		parallel(t, fmt.Sprintf("round %d: concurrent Updates, writer %d failing", r, failing), goroutines, func(g int) error {
			ready.Done()
			ready.Wait()
			if g != failing {
				return s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
					runs.Add(1)
					if counts(g) {
						if _, err := increment(tx, "fw/ctr"); err != nil {
							return err
						}
					}
					return tx.Put(key(g), []byte(key(g)))
				})
			}
			ran := 0
			err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				ran++
				runs.Add(1)
				if _, err := tx.Get("fw/keep"); err != nil {
					return fmt.Errorf("Get(%q): %w", "fw/keep", err)
				}
				if !late {
					return errFail
				}
				if _, err := increment(tx, "fw/ctr"); err != nil {
					return err
				}
				if err := tx.Put(key(g), []byte(key(g))); err != nil {
					return fmt.Errorf("Put(%q): %w", key(g), err)
				}
				if err := tx.Delete("fw/keep"); err != nil {
					return fmt.Errorf("Delete(%q): %w", "fw/keep", err)
				}
				return errFail
			})
			switch {
			case ran == 0:
				return fmt.Errorf("the failing writer's Update returned %v without running its closure", err)
			case !errors.Is(err, errFail):
				return fmt.Errorf("the failing writer's Update (closure failing %s writing) returned %v, want its closure's error %q", map[bool]string{true: "after", false: "before"}[late], err, errFail)
			}
			return nil
		})
		for g := range goroutines {
			if g == failing {
				wantMissing(t, s, key(g))
				continue
			}
			wantValue(t, s, key(g), key(g))
			if counts(g) {
				counted++
			}
		}
		wantValue(t, s, "fw/keep", "k")
		if t.Failed() {
			t.FailNow() // the rounds after would repeat what failed
		}
	}
	// Only the writers that succeeded counted, each once: none read the
	// failing writer's increment.
	wantValue(t, s, "fw/ctr", strconv.Itoa(counted))
	t.Logf("%d rounds of %d concurrent Updates, one failing, ran their closures %d times", rounds, goroutines, runs.Load())
}
