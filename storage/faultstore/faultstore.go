package faultstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/keelhq/keel/storage"
)

// Op names the operation a fault applies to.
type Op uint8

// The operations that can be made to fail.
const (
	OpGet    Op = iota + 1 // Tx.Get
	OpPut                  // Tx.Put
	OpDelete               // Tx.Delete
	OpScan                 // Tx.Scan
	OpCommit               // the commit of an Update whose closure returned nil
)

// Store wraps a storage.Store and makes chosen operations fail. Create one
// with New; it is safe for concurrent use.
type Store struct {
	inner storage.Store
	rerun atomic.Bool
	mu    sync.Mutex
	rules []*rule
}

// Claims returns the claims of the inner store (see storage.Claims).
func (s *Store) Claims() *storage.Claims { return storage.ClaimsOf(s.inner) }

var _ storage.Store = (*Store)(nil)

type rule struct {
	op     Op
	prefix string
	left   int // remaining failures; negative means unlimited
	err    error
}

// New returns a Store over inner with no fault armed.
func New(inner storage.Store) *Store { return &Store{inner: inner} }

// Fail arms a fault: the next n operations op on a key that starts with
// prefix fail with err (n <= 0: every one until Reset). For OpScan the key is
// the scan's prefix; for OpCommit prefix is ignored. A failing Put, Delete or
// commit leaves the store unchanged: the closure's error rolls the
// transaction back.
func (s *Store) Fail(op Op, prefix string, n int, err error) {
	if n <= 0 {
		n = -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{op: op, prefix: prefix, left: n, err: err})
}

// Rerun makes every later Update run its closure twice while on is true: a
// first time in a transaction that is then rolled back, as a store that
// retries after a conflict would, and a second time for real. A closure
// that keeps state outside its Tx between runs shows up in tests.
func (s *Store) Rerun(on bool) { s.rerun.Store(on) }

var errRerun = errors.New("faultstore: first run rolled back")

// Reset disarms every fault.
func (s *Store) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// fault returns the error of the first armed fault matching op and key, and
// uses it up.
func (s *Store) fault(op Op, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.rules {
		if r.op != op || (op != OpCommit && !strings.HasPrefix(key, r.prefix)) {
			continue
		}
		if r.left > 0 {
			r.left--
			if r.left == 0 {
				s.rules = append(s.rules[:i], s.rules[i+1:]...)
			}
		}
		return r.err
	}
	return nil
}

// View runs fn over the underlying store's View with faults applied.
func (s *Store) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	return s.inner.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return fn(ctx, &faultTx{s: s, tx: tx})
	})
}

// Update runs fn over the underlying store's Update with faults applied; an
// OpCommit fault turns fn's success into the fault's error, so nothing is
// committed.
func (s *Store) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if s.rerun.Load() {
		err := s.inner.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := fn(ctx, &faultTx{s: s, tx: tx}); err != nil {
				return err
			}
			return errRerun
		})
		if err != errRerun {
			return err
		}
	}
	return s.inner.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := fn(ctx, &faultTx{s: s, tx: tx}); err != nil {
			return err
		}
		return s.fault(OpCommit, "")
	})
}

// Limits returns the underlying store's limits.
func (s *Store) Limits() storage.Limits { return s.inner.Limits() }

// Close closes the underlying store.
func (s *Store) Close() error { return s.inner.Close() }

// Watch is the inner store's, as storage.Watch gives it.
func (s *Store) Watch(ctx context.Context, prefix string, fn func(key string)) (stop func(), err error) {
	return storage.Watch(ctx, s.inner, prefix, fn)
}

type faultTx struct {
	s  *Store
	tx storage.Tx
}

func (t *faultTx) Get(key string) ([]byte, error) {
	if err := t.s.fault(OpGet, key); err != nil {
		return nil, err
	}
	return t.tx.Get(key)
}

// Size fails as Get does, else tells the size (storage.Sizer).
func (t *faultTx) Size(key string) (int, error) {
	if err := t.s.fault(OpGet, key); err != nil {
		return 0, err
	}
	return storage.SizeOf(t.tx, key)
}

func (t *faultTx) Put(key string, value []byte) error {
	if err := t.s.fault(OpPut, key); err != nil {
		return err
	}
	return t.tx.Put(key, value)
}

func (t *faultTx) Delete(key string) error {
	if err := t.s.fault(OpDelete, key); err != nil {
		return err
	}
	return t.tx.Delete(key)
}

func (t *faultTx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	if err := t.s.fault(OpScan, prefix); err != nil {
		return err
	}
	return t.tx.Scan(prefix, opts, fn)
}
