package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/storage"
)

func openTemp(t *testing.T, opts *Options) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "keel.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (s *Store) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// waitQueued waits until n Updates wait behind the running commit.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	keeltest.Eventually(t, "updates queued behind the running commit", func() error {
		if q := s.queued(); q < n {
			return fmt.Errorf("%d updates queued, want %d", q, n)
		}
		return nil
	})
}

func has(t *testing.T, s *Store, key string) bool {
	t.Helper()
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get(key)
		return err
	})
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// holdCommit starts an Update that blocks inside its closure until release
// is closed, so that later Updates queue behind it.
func holdCommit(t *testing.T, s *Store) (release func(), done <-chan error) {
	t.Helper()
	entered, unblock, result := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		result <- s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			close(entered)
			<-unblock
			return tx.Put("holder", []byte("x"))
		})
	}()
	<-entered
	return func() { close(unblock) }, result
}

func TestGroupedCommitIsolatesAFailedClosure(t *testing.T) {
	s := openTemp(t, nil)
	release, held := holdCommit(t, s)

	var failRuns atomic.Int32
	errFail := errors.New("fail after writing")
	var wg sync.WaitGroup
	results := make([]error, 3)
	updates := []func(context.Context, storage.Tx) error{
		func(ctx context.Context, tx storage.Tx) error { return tx.Put("before", []byte("1")) },
		func(ctx context.Context, tx storage.Tx) error {
			failRuns.Add(1)
			if err := tx.Put("failed", []byte("1")); err != nil {
				return err
			}
			return errFail
		},
		func(ctx context.Context, tx storage.Tx) error { return tx.Put("after", []byte("1")) },
	}
	for i, fn := range updates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.Update(context.Background(), fn)
		}()
		waitQueued(t, s, i+1)
	}
	release()
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if results[0] != nil || results[2] != nil {
		t.Fatalf("closures grouped with a failing one failed: %v, %v", results[0], results[2])
	}
	if !errors.Is(results[1], errFail) {
		t.Fatalf("failing closure: %v", results[1])
	}
	for key, want := range map[string]bool{"holder": true, "before": true, "after": true, "failed": false} {
		if got := has(t, s, key); got != want {
			t.Errorf("key %q present = %v, want %v", key, got, want)
		}
	}
	if n := failRuns.Load(); n != 2 {
		t.Errorf("failing closure ran %d times, want 2 (in the group, then alone)", n)
	}
}

func TestGroupedCommitPanicReachesOnlyItsCaller(t *testing.T) {
	s := openTemp(t, nil)
	release, held := holdCommit(t, s)

	var wg sync.WaitGroup
	var panicked any
	var otherErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer func() { panicked = recover() }()
		s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			tx.Put("panicker", []byte("1"))
			panic("closure bug")
		})
	}()
	waitQueued(t, s, 1)
	go func() {
		defer wg.Done()
		otherErr = s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			return tx.Put("other", []byte("1"))
		})
	}()
	waitQueued(t, s, 2)
	release()
	wg.Wait()
	<-held
	if panicked != "closure bug" {
		t.Fatalf("recovered %v, want the closure's panic", panicked)
	}
	if otherErr != nil || !has(t, s, "other") {
		t.Fatalf("the other closure of the group: err %v, committed %v", otherErr, has(t, s, "other"))
	}
	if has(t, s, "panicker") {
		t.Fatal("the panicking closure's write was committed")
	}
}

func TestGroupedCommitSkipsCanceledCallers(t *testing.T) {
	s := openTemp(t, nil)
	release, held := holdCommit(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			ran = true
			return tx.Put("canceled", []byte("1"))
		})
	}()
	waitQueued(t, s, 1)
	cancel()
	release()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	<-held
	if ran || has(t, s, "canceled") {
		t.Fatalf("closure of a canceled caller ran=%v or was committed", ran)
	}
}

func TestReopenKeepsCommittedData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keel.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Put("k", []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !has(t, s, "k") {
		t.Fatal("committed key lost across reopen")
	}
}

func TestOpenLockedFileIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keel.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(path, &Options{LockTimeout: 50 * time.Millisecond})
	if !errors.Is(err, keel.KindUnavailable) {
		t.Fatalf("second Open: err = %v, want kind unavailable", err)
	}
}

func TestOpenNotABoltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "garbage.db")
	if err := writeFile(path, make([]byte, 8192)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, nil); err == nil {
		t.Fatal("Open of a file of zeros succeeded")
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }

// commitCounts returns how many commits s ran and how many Updates they
// grouped.
func (s *Store) commitCounts() (commits, grouped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commits, s.grouped
}

func TestCommitWaitsForTheWritersOfTheLastCommit(t *testing.T) {
	s := openTemp(t, nil)
	waits := make(chan time.Duration, 10)
	s.after = func(d time.Duration) <-chan time.Time {
		waits <- d
		return nil // never: only the writers end the wait
	}
	release, held := holdCommit(t, s)
	put := func(key string) <-chan error {
		done := make(chan error, 1)
		go func() {
			done <- s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				return tx.Put(key, []byte("1"))
			})
		}()
		return done
	}
	var dones []<-chan error
	for i := range 3 {
		dones = append(dones, put(fmt.Sprint("k", i)))
		waitQueued(t, s, i+1)
	}
	// The holder's commit saw 4 Updates: the next one waits for 4.
	release()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-waits:
		if d <= 0 || d > maxGroupWait {
			t.Errorf("the commit may wait %v, want more than 0 and at most %v", d, maxGroupWait)
		}
	case err := <-dones[0]:
		t.Fatalf("the 3 queued Updates committed without waiting for a 4th (err %v)", err)
	}
	dones = append(dones, put("k3"))
	for _, done := range dones {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if commits, grouped := s.commitCounts(); commits != 2 || grouped != 5 {
		t.Fatalf("%d commits ran %d Updates, want 2 running 5 (the holder, then the other 4 together)", commits, grouped)
	}
}

func TestLoneWriterCommitsWithoutWaiting(t *testing.T) {
	s := openTemp(t, nil)
	s.after = func(d time.Duration) <-chan time.Time {
		t.Errorf("a lone writer's commit waits (up to %v)", d)
		return time.After(0)
	}
	for i := range 3 {
		err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			return tx.Put(fmt.Sprint("k", i), []byte("1"))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if commits, grouped := s.commitCounts(); commits != 3 || grouped != 3 {
		t.Fatalf("%d commits ran %d Updates, want 3 and 3", commits, grouped)
	}
}
