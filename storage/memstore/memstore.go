package memstore

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	iradix "github.com/hashicorp/go-immutable-radix/v2"

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
	current atomic.Pointer[iradix.Tree[[]byte]] // committed state; immutable
	writeMu sync.Mutex                          // one Update at a time
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
	s.current.Store(iradix.New[[]byte]())
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
	t := &tx{root: s.current.Load().Root()}
	t.Init(ctx, s, &s.limits, false)
	defer t.Finish()
	return fn(t, t)
}

// Update runs fn in a transaction of the immutable tree and publishes the
// new tree when fn returns nil. Updates run one at a time, and fn is called
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
	t := &tx{txn: s.current.Load().Txn()}
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
		s.current.Store(t.txn.CommitOnly())
	}
	return t.Written(), nil
}

// tx reads root in a View, and txn in an Update.
type tx struct {
	txbase.Base
	root *iradix.Node[[]byte]
	txn  *iradix.Txn[[]byte]
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

// lookup returns key's value as the tree holds it, not to be modified,
// having counted the read.
func (t *tx) lookup(key string) ([]byte, error) {
	if err := t.CheckRead(); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, storage.ErrEmptyKey
	}
	t.read(key)
	var v []byte
	var ok bool
	if t.txn != nil {
		v, ok = t.txn.Get([]byte(key))
	} else {
		v, ok = t.root.Get([]byte(key))
	}
	if !ok {
		return nil, storage.ErrNotFound
	}
	return v, nil
}

func (t *tx) Put(key string, value []byte) error {
	if err := t.CheckPut(key, value); err != nil {
		return err
	}
	t.txn.Insert([]byte(key), clone(value))
	return nil
}

func (t *tx) Delete(key string) error {
	if err := t.CheckDelete(key); err != nil {
		return err
	}
	t.txn.Delete([]byte(key))
	return nil
}

func (t *tx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	if err := t.CheckRead(); err != nil {
		return err
	}
	root := t.root
	if t.txn != nil {
		// fn may write through t: iterate over a clone of the
		// transaction, which later writes do not touch.
		root = t.txn.Clone().Root()
		t.scans++
	}
	start := max(prefix, opts.From, opts.After)
	if start == prefix {
		return t.walk(root, prefix, opts, fn)
	}
	it := root.Iterator()
	it.SeekLowerBound([]byte(start))
	for n := 1; ; n++ {
		k, v, ok := it.Next()
		if !ok || !bytes.HasPrefix(k, []byte(prefix)) {
			return nil
		}
		key := keyString(k)
		if key == opts.After {
			continue
		}
		if n%txbase.ScanCheckEvery == 0 {
			if err := t.CheckRead(); err != nil {
				return err
			}
		}
		if !opts.KeysOnly {
			v = clone(v)
		} else {
			v = nil
		}
		t.read(key)
		if err := fn(key, v); err != nil {
			if err == storage.StopScan {
				return nil
			}
			return err
		}
	}
}

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append(make([]byte, 0, len(b)), b...)
}

// walk is Scan of every key under prefix: a recursive walk of the subtree
// of prefix, which neither compares each key with the prefix nor keeps an
// iterator's stack, as a seek to a later start has to.
func (t *tx) walk(root *iradix.Node[[]byte], prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	var err error
	n := 0
	root.WalkPrefix([]byte(prefix), func(k, v []byte) bool {
		key := keyString(k)
		if key == opts.After {
			return false
		}
		if n++; n%txbase.ScanCheckEvery == 0 {
			if err = t.CheckRead(); err != nil {
				return true
			}
		}
		if !opts.KeysOnly {
			v = clone(v)
		} else {
			v = nil
		}
		t.read(key)
		if ferr := fn(key, v); ferr != nil {
			if ferr != storage.StopScan {
				err = ferr
			}
			return true
		}
		return false
	})
	return err
}

// keyString returns the key k of a leaf of the tree as a string that
// shares its bytes, without a copy. This is safe because no byte of a key
// in the tree is ever written: Put inserts a fresh copy of its key, the
// tree is immutable (a change makes new nodes and leaves, and never
// touches the bytes of a key), and nothing else holds the slice. A Scan of
// a large folder so allocates nothing per key.
func keyString(k []byte) string {
	if len(k) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(k), len(k))
}
