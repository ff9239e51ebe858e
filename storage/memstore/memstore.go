package memstore

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/btree"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/internal/txbase"
)

// Options configure a Store. The zero value and nil mean defaults.
type Options struct {
	// Limits replaces storage.DefaultLimits when it has any field set.
	Limits storage.Limits
}

// Store is an in-memory storage.Store. Create one with New. It is safe for
// concurrent use.
type Store struct {
	limits  storage.Limits
	current atomic.Pointer[btree.BTreeG[item]] // committed state; never mutated once published
	writeMu sync.Mutex                         // one Update at a time
	closed  atomic.Bool
	running sync.WaitGroup // transactions in flight, for Close
	closeMu sync.RWMutex   // Close takes it to stop new transactions joining running
}

var _ storage.Store = (*Store)(nil)

type item struct {
	key   string
	value []byte
}

func less(a, b item) bool { return a.key < b.key }

const degree = 32

// New returns an empty Store.
func New(opts *Options) *Store {
	s := &Store{limits: storage.DefaultLimits}
	if opts != nil && opts.Limits != (storage.Limits{}) {
		s.limits = opts.Limits
	}
	s.current.Store(btree.NewG(degree, less))
	return s
}

// Limits returns the store's limits.
func (s *Store) Limits() storage.Limits { return s.limits }

// Close marks the store closed and waits for running transactions. The data
// is dropped when the Store is no longer referenced.
func (s *Store) Close() error {
	s.closeMu.Lock()
	s.closed.Store(true)
	s.closeMu.Unlock()
	s.running.Wait()
	return nil
}

func (s *Store) begin(ctx context.Context) error {
	if err := txbase.Begin(ctx, s); err != nil {
		return err
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed.Load() {
		return storage.ErrClosed
	}
	s.running.Add(1)
	return nil
}

// View runs fn over a snapshot of the committed state. Views never wait for
// writers, nor writers for Views.
func (s *Store) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.running.Done()
	t := &tx{tree: s.current.Load()}
	t.Init(ctx, s, s.limits, false)
	defer t.Finish()
	return fn(t, t)
}

// Update runs fn on a copy-on-write clone of the committed state and
// publishes the clone when fn returns nil. Updates run one at a time, and fn
// is called exactly once.
func (s *Store) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.running.Done()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	base := s.current.Load()
	t := &tx{tree: base.Clone()}
	t.Init(ctx, s, s.limits, true)
	err := func() error {
		defer t.Finish()
		return fn(t, t)
	}()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.Writes() > 0 {
		s.current.Store(t.tree)
	}
	return nil
}

type tx struct {
	txbase.Base
	tree *btree.BTreeG[item]
}

func (t *tx) Get(key string) ([]byte, error) {
	if err := t.CheckRead(); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, storage.ErrEmptyKey
	}
	it, ok := t.tree.Get(item{key: key})
	if !ok {
		return nil, storage.ErrNotFound
	}
	return clone(it.value), nil
}

func (t *tx) Put(key string, value []byte) error {
	if err := t.CheckPut(key, value); err != nil {
		return err
	}
	t.tree.ReplaceOrInsert(item{key: key, value: clone(value)})
	return nil
}

func (t *tx) Delete(key string) error {
	if err := t.CheckDelete(key); err != nil {
		return err
	}
	t.tree.Delete(item{key: key})
	return nil
}

func (t *tx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	if err := t.CheckRead(); err != nil {
		return err
	}
	tree := t.tree
	if t.Writable() {
		// fn may write through t: iterate over a clone so that writes
		// do not disturb the iteration.
		tree = tree.Clone()
	}
	start := prefix
	if opts.After > start {
		start = opts.After
	}
	var err error
	n := 0
	tree.AscendGreaterOrEqual(item{key: start}, func(it item) bool {
		if !strings.HasPrefix(it.key, prefix) {
			return false
		}
		if it.key == opts.After {
			return true
		}
		if n++; n%txbase.ScanCheckEvery == 0 {
			if err = t.CheckRead(); err != nil {
				return false
			}
		}
		var v []byte
		if !opts.KeysOnly {
			v = clone(it.value)
		}
		err = fn(it.key, v)
		return err == nil
	})
	if err == storage.StopScan {
		return nil
	}
	return err
}

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append(make([]byte, 0, len(b)), b...)
}
