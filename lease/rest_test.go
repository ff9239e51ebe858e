package lease

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
)

// slowStore is a store whose transactions each take at least its delay
// (real time), and which records when each began and ended.
type slowStore struct {
	limited
	delay time.Duration
	mu    sync.Mutex
	txs   []txSpan
}

type txSpan struct {
	write      bool
	start, end time.Time
}

func (s *slowStore) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	return s.record(false, func() error { return s.limited.View(ctx, fn) })
}

func (s *slowStore) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	return s.record(true, func() error { return s.limited.Update(ctx, fn) })
}

func (s *slowStore) record(write bool, f func() error) error {
	start := time.Now()
	time.Sleep(s.delay)
	err := f()
	end := time.Now()
	s.mu.Lock()
	s.txs = append(s.txs, txSpan{write, start, end})
	s.mu.Unlock()
	return err
}

func (s *slowStore) reset() []txSpan {
	s.mu.Lock()
	defer s.mu.Unlock()
	txs := s.txs
	s.txs = nil
	return txs
}

// TestStepRestsAfterEachBatch: after each batch, a Step pauses for at
// least as long as the batch's read and commit kept the store busy, so
// that a storm of due leases leaves the store and the cores to other work
// half the time (BENCHMARKS.md, lease storm, session 13).
func TestStepRestsAfterEachBatch(t *testing.T) {
	slow := &slowStore{limited: limited{everystore.Mem(t), 30}, delay: 2 * time.Millisecond}
	e := newEnv(t, everystore.Mem, nil, func(storage.Store) storage.Store { return slow })
	if e.m.batch != 5 {
		t.Fatalf("batch %d, want 5", e.m.batch)
	}
	const batches = 3
	for range batches * e.m.batch {
		e.issue(t, IssueRequest{TTL: time.Minute})
	}
	slow.reset()
	e.step(t, t0.Add(time.Minute))
	if got := len(e.rev.ids()); got != batches*e.m.batch {
		t.Fatalf("revoked %d of %d", got, batches*e.m.batch)
	}
	// The Step's transactions: a read and a commit per batch, then the
	// read that finds nothing due.
	txs := slow.reset()
	if len(txs) != 2*batches+1 {
		t.Fatalf("%d transactions, want %d: %+v", len(txs), 2*batches+1, txs)
	}
	for i := 0; i+2 < len(txs); i += 2 {
		read, commit, next := txs[i], txs[i+1], txs[i+2]
		if read.write || !commit.write || next.write {
			t.Fatalf("transactions %d..%d: writes %v %v %v, want a read, a commit, a read", i, i+2, read.write, commit.write, next.write)
		}
		busy := read.end.Sub(read.start) + commit.end.Sub(commit.start)
		if gap := next.start.Sub(commit.end); gap < busy {
			t.Errorf("batch %d: the next read began %s after the commit, want at least the batch's %s in the store", i/2+1, gap, busy)
		}
	}
}
