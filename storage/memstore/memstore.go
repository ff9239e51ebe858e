package memstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/internal/txbase"
)

// Options configure a Store. The zero value and nil mean defaults.
type Options struct {
	// Limits replaces storage.DefaultLimits() when it has any field set.
	Limits storage.Limits
}

// Store is an in-memory storage.Store. Create one with New. It is safe for
// concurrent use.
type Store struct {
	limits  storage.Limits
	current atomic.Pointer[node] // root of the committed state; nil when empty
	writeMu sync.Mutex           // one Update at a time; guards gen
	gen     uint64               // the last gen given to a writer
	next    func() uint64        // nextGen, made once for the writers; guarded by writeMu
	gate    txbase.Gate
	watch   txbase.Watchers
	claims  storage.Claims
}

// Claims returns the parts of the store claimed by the components built
// over it in this process (see storage.Claims).
func (s *Store) Claims() *storage.Claims { return &s.claims }

var (
	_ storage.Store   = (*Store)(nil)
	_ storage.Watcher = (*Store)(nil)
)

// New returns an empty Store.
func New(opts *Options) *Store {
	s := &Store{limits: storage.DefaultLimits()}
	if opts != nil && opts.Limits != (storage.Limits{}) {
		s.limits = opts.Limits
	}
	return s
}

// Limits returns the store's limits.
func (s *Store) Limits() storage.Limits { return s.limits }

// Close marks the store closed and waits for running transactions. The data
// is dropped when the Store is no longer referenced.
func (s *Store) Close() error {
	if s.gate.Close() {
		s.watch.Close()
	}
	return nil
}

// Watch reports the keys under prefix written by the Updates that commit
// after it returns, as storage.Watcher: fn runs in the goroutine of the
// Update, after the commit. It fails with storage.ErrClosed once the store
// is closed.
func (s *Store) Watch(ctx context.Context, prefix string, fn func(key string)) (stop func(), err error) {
	if err := s.gate.Begin(ctx, s); err != nil {
		return nil, err
	}
	defer s.gate.Leave()
	return s.watch.Add(prefix, fn), nil
}

// View runs fn over a snapshot of the committed state. Views never wait for
// writers, nor writers for Views.
func (s *Store) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if err := s.gate.Begin(ctx, s); err != nil {
		return err
	}
	defer s.gate.Leave()
	t := &tx{root: s.current.Load()}
	t.Init(ctx, s, &s.limits, false)
	defer t.Finish()
	return fn(t, t)
}

// Update runs fn over a copy-on-write version of the committed tree and
// publishes its root when fn returns nil. Updates run one at a time, and fn is called
// exactly once.
func (s *Store) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if err := s.gate.Begin(ctx, s); err != nil {
		return err
	}
	defer s.gate.Leave()
	written, err := s.update(ctx, fn)
	if err == nil {
		s.watch.Notify(written)
	}
	return err
}

// update runs fn and commits; it returns the keys written.
func (s *Store) update(ctx context.Context, fn func(context.Context, storage.Tx) error) ([]string, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.next == nil {
		s.next = s.nextGen
	}
	t := &tx{wr: writer{root: s.current.Load(), gen: s.nextGen(), next: s.next}} // one allocation for both
	t.w = &t.wr
	t.Init(ctx, s, &s.limits, true)
	if s.limits.MaxTxReads > 0 {
		t.reads = map[string]struct{}{}
	}
	err := func() error {
		defer t.Finish()
		return fn(t, t)
	}()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if t.Writes() > 0 {
		if n := len(t.reads) + t.scans; t.reads != nil && n > s.limits.MaxTxReads {
			return nil, fmt.Errorf("%w: the transaction read %d keys and scans, at most %d (Limits.MaxTxReads)", storage.ErrTxTooLarge, n, s.limits.MaxTxReads)
		}
		s.current.Store(t.w.root)
	}
	return t.Written(), nil
}

// nextGen returns a gen no node carries yet; writeMu must be held.
func (s *Store) nextGen() uint64 {
	s.gen++
	return s.gen
}

// tx reads root in a View, and w's tree in an Update.
type tx struct {
	txbase.Base
	root *node
	w    *writer // &wr in an Update, nil in a View
	wr   writer
	// reads holds the keys an Update read, and scans counts its Scans,
	// when the store bounds them (Limits.MaxTxReads); reads is nil
	// otherwise.
	reads map[string]struct{}
	scans int
}

// read counts key against Limits.MaxTxReads.
func (t *tx) read(key string) {
	if t.reads != nil {
		t.reads[key] = struct{}{}
	}
}

func (t *tx) Get(key string) ([]byte, error) {
	v, err := t.lookup(key)
	if err != nil {
		return nil, err
	}
	return clone(v), nil
}

// Size returns the length of key's value without copying it (storage.Sizer).
func (t *tx) Size(key string) (int, error) {
	v, err := t.lookup(key)
	return len(v), err
}

// lookup returns key's value as the tree holds it, having counted the
// read.
func (t *tx) lookup(key string) (string, error) {
	if err := t.CheckRead(); err != nil {
		return "", err
	}
	if key == "" {
		return "", storage.ErrEmptyKey
	}
	t.read(key)
	root := t.root
	if t.w != nil {
		root = t.w.root
	}
	v, ok := get(root, key)
	if !ok {
		return "", storage.ErrNotFound
	}
	return v, nil
}

func (t *tx) Put(key string, value []byte) error {
	if err := t.CheckPut(key, value); err != nil {
		return err
	}
	t.w.put(key, string(value))
	return nil
}

func (t *tx) Delete(key string) error {
	if err := t.CheckDelete(key); err != nil {
		return err
	}
	t.w.del(key)
	return nil
}

func (t *tx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	if err := t.CheckRead(); err != nil {
		return err
	}
	root := t.root
	if t.w != nil {
		// fn may write through t: iterate over a snapshot, which later
		// writes do not touch.
		root = t.w.snapshot()
		t.scans++
	}
	if root == nil {
		return nil
	}
	var err error
	n := 0
	ascend(root, max(prefix, opts.From, opts.After), func(it *item) bool {
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
			v = clone(it.val)
		}
		t.read(it.key)
		if ferr := fn(it.key, v); ferr != nil {
			if ferr != storage.StopScan {
				err = ferr
			}
			return false
		}
		return true
	})
	return err
}

// clone returns a copy of a value of the tree, never nil.
func clone(s string) []byte {
	return append(make([]byte, 0, len(s)), s...)
}
