package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/internal/txbase"
)

// Options configure a Store. A nil *Options means defaults.
type Options struct {
	// LockTimeout is how long Open waits for another process to release
	// the file. Zero means 5 seconds; a negative value waits forever.
	LockTimeout time.Duration
	// NoSync skips fsync at commit. A crash of the machine (not of the
	// process) may then lose or corrupt recent commits: use it only for
	// throwaway data.
	NoSync bool
	// MaxBatch caps how many concurrent Updates are grouped into one
	// commit. Zero means 128; 1 disables grouping.
	MaxBatch int
	// Limits replaces storage.DefaultLimits() when it has any field set.
	// MaxKeySize above bbolt's 32768 is lowered to it.
	Limits storage.Limits
	// FileMode is the mode of a new file. Zero means 0600.
	FileMode os.FileMode
	// InitialMmapSize is the size of the first memory map of the file.
	// While the file fits in it, a commit never waits for open Views;
	// a commit that must grow the map waits until the Views open at that
	// moment end. Zero means 1 GiB (address space, not memory or disk).
	InitialMmapSize int
}

// Store is a storage.Store in one bbolt file. Create one with Open. It is
// safe for concurrent use by the goroutines of one process; bbolt's file
// lock keeps other processes out while it is open.
type Store struct {
	db       *bolt.DB
	limits   storage.Limits
	maxBatch int

	mu      sync.Mutex
	queue   []*call // Updates waiting for the next commit
	leading bool    // an Update is committing a batch
	// peak is how many Updates the last commit saw: its own and those
	// that queued while it ran. took is how long it ran.
	peak int
	took time.Duration
	// want, when not 0, is the queue length the leader waits for; the
	// Update that brings the queue to it signals arrived (buffered).
	want    int
	arrived chan struct{}
	// after is time.After; tests replace it to control the wait.
	after func(time.Duration) <-chan time.Time
	// calls keeps the calls of returned Updates for reuse.
	calls sync.Pool
	// commits and grouped count the commits and the Updates they ran
	// (tests read them).
	commits, grouped int

	gate   txbase.Gate
	watch  txbase.Watchers
	claims storage.Claims
}

// Claims returns the parts of the store claimed by the components built
// over it in this process (see storage.Claims).
func (s *Store) Claims() *storage.Claims { return &s.claims }

var (
	_ storage.Store   = (*Store)(nil)
	_ storage.Watcher = (*Store)(nil)
)

var bucketName = []byte("keel")

// A value of largeValue bytes or more is kept in a bucket of its own,
// nested in the store's at its key, as the one value of that bucket (at
// largeKey), not among its neighbours: bbolt writes a leaf whole at
// commit, and a leaf of four keys or fewer never splits, so that a write
// next to large values would copy them all into the pages of its commit
// (and read them from the file's memory map, where their pages would stay
// resident). In a bucket of its own, a large value is written only when it
// is. A file written before holds large values among their neighbours: they
// read as any other, and move into buckets of their own when written again.
const largeValue = keel.LargeValue

var largeKey = []byte("v")

// nested returns the value of the bucket of its own of a large value at key
// in b, or nil when key holds no bucket.
func nested(b *bolt.Bucket, key []byte) []byte {
	if sub := b.Bucket(key); sub != nil {
		return sub.Get(largeKey)
	}
	return nil
}

// put stores value at key in b: a large value in a bucket of its own, any
// other among its neighbours, replacing what key held either way. value is
// b's until the transaction ends.
func put(b *bolt.Bucket, key, value []byte) error {
	if len(value) < largeValue {
		err := b.Put(key, value)
		if errors.Is(err, berrors.ErrIncompatibleValue) { // a large value's bucket
			if err = b.DeleteBucket(key); err == nil {
				err = b.Put(key, value)
			}
		}
		return err
	}
	sub := b.Bucket(key)
	if sub == nil {
		var err error
		sub, err = b.CreateBucket(key)
		if errors.Is(err, berrors.ErrIncompatibleValue) { // a value among its neighbours
			if err = b.Delete(key); err == nil {
				sub, err = b.CreateBucket(key)
			}
		}
		if err != nil {
			return err
		}
	}
	return sub.Put(largeKey, value)
}

// Open opens the bbolt file at path, creating it when missing, and returns a
// Store over it. An error of kind keel.KindUnavailable means the file is
// locked by another process past the timeout; other errors mean it cannot be
// read as a bbolt file.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = 5 * time.Second
	} else if o.LockTimeout < 0 {
		o.LockTimeout = 0 // bbolt: wait forever
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 128
	}
	if o.FileMode == 0 {
		o.FileMode = 0o600
	}
	if o.InitialMmapSize <= 0 {
		o.InitialMmapSize = 1 << 30
	}
	limits := storage.DefaultLimits()
	if o.Limits != (storage.Limits{}) {
		limits = o.Limits
	}
	if limits.MaxKeySize <= 0 || limits.MaxKeySize > bolt.MaxKeySize {
		limits.MaxKeySize = bolt.MaxKeySize
	}
	if limits.MaxValueSize <= 0 || limits.MaxValueSize > bolt.MaxValueSize {
		limits.MaxValueSize = bolt.MaxValueSize
	}
	db, err := bolt.Open(path, o.FileMode, &bolt.Options{
		Timeout:         o.LockTimeout,
		NoSync:          o.NoSync,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: o.InitialMmapSize,
	})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("boltstore: open %s: file is locked by another process: %w", path, keel.KindUnavailable)
		}
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketName)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return &Store{db: db, limits: limits, maxBatch: o.MaxBatch, arrived: make(chan struct{}, 1), after: time.After}, nil
}

// Limits returns the store's limits.
func (s *Store) Limits() storage.Limits { return s.limits }

// Close waits for running transactions, then closes the file.
func (s *Store) Close() error {
	if !s.gate.Close() {
		return nil
	}
	s.watch.Close()
	return s.db.Close()
}

// Watch reports the keys under prefix written by the Updates that commit
// after it returns, as storage.Watcher: fn runs in the goroutine that
// commits, after the commit. bbolt's file lock keeps other processes out,
// so every commit is this process's. It fails with storage.ErrClosed once
// the store is closed.
func (s *Store) Watch(ctx context.Context, prefix string, fn func(key string)) (stop func(), err error) {
	if err := s.gate.Begin(ctx, s); err != nil {
		return nil, err
	}
	defer s.gate.Leave()
	return s.watch.Add(prefix, fn), nil
}

// View runs fn in a bbolt read transaction. Views run alongside each other
// and alongside a commit.
func (s *Store) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if err := s.gate.Begin(ctx, s); err != nil {
		return err
	}
	defer s.gate.Leave()
	btx, err := s.db.Begin(false)
	if err != nil {
		return fmt.Errorf("boltstore: %w", err)
	}
	defer btx.Rollback()
	t := &tx{b: btx.Bucket(bucketName)}
	t.Init(ctx, s, &s.limits, false)
	defer t.Finish()
	return fn(t, t)
}

// Update runs fn in a read-write transaction and returns once its writes are
// committed and, unless Options.NoSync, synced to disk.
//
// Updates that arrive while a commit is running are grouped and committed
// together by one of them, so that N concurrent writers share one fsync
// (the commit may wait, at most 2 ms, for the writers of the last one). fn
// may therefore run after other closures in the same bbolt transaction, and
// sees their writes as if they had committed first. When fn fails after
// writing, the group is rolled back and committed again without it, and fn
// is run again alone: fn may run more than once.
func (s *Store) Update(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if err := s.gate.Begin(ctx, s); err != nil {
		return err
	}
	defer s.gate.Leave()
	c, _ := s.calls.Get().(*call)
	if c == nil {
		c = &call{done: make(chan outcome, 1)}
	}
	c.ctx, c.fn = ctx, fn
	s.mu.Lock()
	s.queue = append(s.queue, c)
	lead := !s.leading
	s.leading = true
	if s.want > 0 && len(s.queue) >= s.want {
		s.want = 0
		s.arrived <- struct{}{}
	}
	s.mu.Unlock()
	if lead {
		s.lead()
	}
	out := <-c.done
	if out.lead {
		s.lead()
		out = <-c.done
	}
	// Delivered, c.done is empty and no commit refers to c any more.
	c.ctx, c.fn = nil, nil
	s.calls.Put(c)
	if out.panicked != nil {
		panic(out.panicked)
	}
	return out.err
}

type call struct {
	ctx  context.Context
	fn   func(context.Context, storage.Tx) error
	done chan outcome // buffered: at most one lead signal, then one result
}

type outcome struct {
	err      error
	panicked any
	lead     bool     // the receiver is to commit the next batch
	written  []string // the keys written, for the watches
}

// maxGroupWait bounds how long a commit waits for the writers of the
// previous one (see lead).
const maxGroupWait = 2 * time.Millisecond

// lead commits the calls at the head of the queue, then hands the lead to
// the next waiting call, or gives it up when none waits.
//
// Before it commits, it waits until as many calls queue as the last commit
// saw (its own and those that queued while it ran), but at most half the
// time the last commit took and at most maxGroupWait: under many writers,
// those of the last commit come back soon, and one commit then serves them
// all instead of two half groups alternating. A lone writer finds its
// predecessor's peak at 1 and waits for nothing.
//
// First of all it yields the processor once, so that the goroutines ready
// to run (writers about to queue) go first and join the commit: on one
// processor they could not run while the commit's fsync holds it, and the
// peak would stay at 1, one fsync per Update.
func (s *Store) lead() {
	runtime.Gosched()
	s.mu.Lock()
	if want := min(s.peak, s.maxBatch); len(s.queue) < want {
		s.want = want
		s.mu.Unlock()
		select {
		case <-s.arrived:
		case <-s.after(min(s.took/2, maxGroupWait)):
		}
		s.mu.Lock()
		s.want = 0
		select {
		case <-s.arrived: // signaled after the timer fired
		default:
		}
	}
	n := min(len(s.queue), s.maxBatch)
	batch := s.queue[:n:n]
	s.queue = append([]*call(nil), s.queue[n:]...)
	s.mu.Unlock()

	start := time.Now()
	s.commit(batch)
	took := time.Since(start)

	s.mu.Lock()
	s.took = took
	s.peak = n + len(s.queue)
	s.commits++
	s.grouped += n
	if len(s.queue) > 0 {
		s.queue[0].done <- outcome{lead: true}
	} else {
		s.leading = false
	}
	s.mu.Unlock()
}

// fillPercent is how full bbolt fills the first part of a page it splits
// at commit (bbolt's default is half): see "Pages" in the package
// documentation.
const fillPercent = 0.75

// errAbort rolls back a batch in which a closure failed after writing.
var errAbort = errors.New("boltstore: batch aborted")

// commit runs the calls of batch in one bbolt transaction and delivers each
// one's outcome. A call that fails after writing is taken out; the rest are
// run again, and the failed one alone afterwards.
func (s *Store) commit(batch []*call) {
	var solo []*call
	for len(batch) > 0 {
		outs := make([]outcome, len(batch))
		txs := make([]tx, len(batch)) // one allocation for the batch
		failed := -1
		err := s.db.Update(func(btx *bolt.Tx) error {
			b := btx.Bucket(bucketName)
			// One cursor for the batch's Gets and Deletes, made on
			// first use: each use seeks first, and the closures run
			// one after another.
			var cur *bolt.Cursor
			b.FillPercent = fillPercent
			for i, c := range batch {
				if err := c.ctx.Err(); err != nil {
					outs[i] = outcome{err: err}
					continue
				}
				t := &txs[i]
				t.b, t.cur = b, cur
				t.Init(c.ctx, s, &s.limits, true)
				if s.limits.MaxTxReads > 0 {
					t.reads = map[string]struct{}{}
				}
				out := run(c.fn, t)
				t.Finish()
				cur = t.cur
				out.written = t.Written()
				if out.err == nil && out.panicked == nil {
					if err := c.ctx.Err(); err != nil {
						out.err = err
					} else if n := len(t.reads) + t.scans; t.Writes() > 0 && t.reads != nil && n > s.limits.MaxTxReads {
						out.err = fmt.Errorf("%w: the transaction read %d keys and scans, at most %d (Limits.MaxTxReads)", storage.ErrTxTooLarge, n, s.limits.MaxTxReads)
					}
				}
				outs[i] = out
				if (out.err != nil || out.panicked != nil) && t.Writes() > 0 {
					failed = i
					return errAbort
				}
			}
			return nil
		})
		if failed < 0 {
			for i, c := range batch {
				if outs[i].err == nil && outs[i].panicked == nil {
					if err != nil {
						outs[i].err = fmt.Errorf("boltstore: commit: %w", err)
					} else {
						s.watch.Notify(outs[i].written)
					}
				}
				c.done <- outs[i]
			}
			break
		}
		c, alone := batch[failed], len(batch) == 1
		batch = append(batch[:failed:failed], batch[failed+1:]...)
		if alone || outs[failed].panicked != nil || c.ctx.Err() != nil {
			// Run alone already, or a panic, or canceled: the outcome
			// is final and nothing of it was committed.
			c.done <- outs[failed]
			continue
		}
		solo = append(solo, c)
	}
	for _, c := range solo {
		s.commit([]*call{c})
	}
}

func run(fn func(context.Context, storage.Tx) error, t *tx) (out outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = outcome{panicked: p}
		}
	}()
	return outcome{err: fn(t, t)}
}

type tx struct {
	txbase.Base
	b *bolt.Bucket
	// cur is the cursor of Get and Delete, made on first use and shared
	// by the transactions of a commit, which run one after another: bbolt's
	// Bucket.Get and Bucket.Delete each make a cursor and grow its
	// stack anew. Each use seeks first, so a write between two uses
	// does not matter; a Scan walks a cursor of its own.
	cur *bolt.Cursor
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
	return bytes.Clone(v), nil
}

// Size returns the length of key's value without copying it out of the
// file (storage.Sizer).
func (t *tx) Size(key string) (int, error) {
	v, err := t.lookup(key)
	return len(v), err
}

// lookup returns key's value as the file maps it, valid until the
// transaction ends and not to be modified, having counted the read.
func (t *tx) lookup(key string) ([]byte, error) {
	if err := t.CheckRead(); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, storage.ErrEmptyKey
	}
	t.read(key)
	kb := keyBytes(key)
	k, v := t.seek(kb)
	if !bytes.Equal(k, kb) {
		return nil, storage.ErrNotFound
	}
	if v == nil { // a large value's bucket
		if v = nested(t.b, kb); v == nil {
			return nil, storage.ErrNotFound
		}
	}
	return v, nil
}

// seek moves t's cursor to the first key at or after key, and returns it
// with its value (nil for a nested bucket).
func (t *tx) seek(key []byte) ([]byte, []byte) {
	if t.cur == nil {
		t.cur = t.b.Cursor()
	}
	return t.cur.Seek(key)
}

// keyBytes returns the bytes of key without a copy, for the calls of
// bbolt that neither keep nor modify their key (Seek, Bucket,
// DeleteBucket); Put keeps its key and gets a copy.
func keyBytes(key string) []byte { return unsafe.Slice(unsafe.StringData(key), len(key)) }

func (t *tx) Put(key string, value []byte) error {
	if err := t.CheckPut(key, value); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	// One copy of key and value, which bbolt keeps until the commit.
	kv := make([]byte, len(key)+len(value))
	copy(kv[copy(kv, key):], value)
	if err := put(t.b, kv[:len(key):len(key)], kv[len(key):]); err != nil {
		return fmt.Errorf("boltstore: put %q: %w", key, err)
	}
	return nil
}

func (t *tx) Delete(key string) error {
	if err := t.CheckDelete(key); err != nil {
		return err
	}
	kb := keyBytes(key)
	k, v := t.seek(kb)
	if !bytes.Equal(k, kb) {
		return nil // nothing at key
	}
	var err error
	if v == nil { // a large value's bucket
		err = t.b.DeleteBucket(kb)
	} else {
		err = t.cur.Delete()
	}
	if err != nil {
		return fmt.Errorf("boltstore: delete %q: %w", key, err)
	}
	return nil
}

// scanChunk is how many entries Scan, in an Update, copies out of a cursor
// before it calls fn for them; fn may then write, which would invalidate a
// live cursor. In a View nothing writes, and Scan walks one cursor.
const scanChunk = 64

func (t *tx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	if err := t.CheckRead(); err != nil {
		return err
	}
	p := []byte(prefix)
	seek := []byte(max(prefix, opts.From, opts.After))
	var after []byte
	if opts.After != "" && opts.After >= prefix && opts.After >= opts.From {
		after = []byte(opts.After)
	}
	if !t.Writable() {
		return t.scanView(p, seek, after, opts.KeysOnly, fn)
	}
	t.scans++
	type entry struct {
		key   string
		value []byte
	}
	chunk := make([]entry, 0, scanChunk)
	for {
		chunk = chunk[:0]
		c := t.b.Cursor()
		k, v := c.Seek(seek)
		if after != nil && bytes.Equal(k, after) {
			k, v = c.Next()
		}
		for ; k != nil && bytes.HasPrefix(k, p) && len(chunk) < scanChunk; k, v = c.Next() {
			e := entry{key: string(k)}
			if !opts.KeysOnly {
				if v == nil { // a large value's bucket
					v = nested(t.b, k)
				}
				e.value = bytes.Clone(v)
				if e.value == nil {
					e.value = []byte{}
				}
			}
			chunk = append(chunk, e)
		}
		more := k != nil && bytes.HasPrefix(k, p)
		for _, e := range chunk {
			t.read(e.key)
			if err := fn(e.key, e.value); err != nil {
				if err == storage.StopScan {
					return nil
				}
				return err
			}
		}
		if !more || len(chunk) == 0 {
			return nil
		}
		if err := t.CheckRead(); err != nil {
			return err
		}
		after = []byte(chunk[len(chunk)-1].key)
		seek = after
	}
}

// scanView is Scan in a read-only transaction: one cursor, one copy per
// entry visited.
func (t *tx) scanView(p, seek, after []byte, keysOnly bool, fn func(string, []byte) error) error {
	var keys keyArena
	return t.walk(p, seek, after, keysOnly, func(k, v []byte) error {
		var value []byte
		if !keysOnly {
			value = bytes.Clone(v)
			if value == nil {
				value = []byte{}
			}
		}
		return fn(keys.string(k), value)
	})
}

// walk calls fn with each key from seek (after excluded) that starts with p,
// and its value (nil when keysOnly), as bbolt's memory holds them: valid
// until the transaction ends, not to be modified. Nothing may write while
// it walks. storage.StopScan from fn ends it with nil.
func (t *tx) walk(p, seek, after []byte, keysOnly bool, fn func(k, v []byte) error) error {
	c := t.b.Cursor()
	k, v := c.Seek(seek)
	if after != nil && bytes.Equal(k, after) {
		k, v = c.Next()
	}
	for n := 1; k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		if n++; n%txbase.ScanCheckEvery == 0 {
			if err := t.CheckRead(); err != nil {
				return err
			}
		}
		if keysOnly {
			v = nil
		} else if v == nil { // a large value's bucket
			v = nested(t.b, k)
		}
		if err := fn(k, v); err != nil {
			if err == storage.StopScan {
				return nil
			}
			return err
		}
	}
	return nil
}

// ScanLent calls fn for each key under prefix, in ascending order, with
// the key and its value as the file maps them, without copying them: they
// are valid only until fn returns and must not be modified. It stops at,
// and returns, fn's first error (storage.StopScan stops it with nil, as
// Scan). Package snapshot finds it by its method set and saves a View
// through it; in an Update it copies, as Scan does.
func (t *tx) ScanLent(prefix string, fn func(key, value []byte) error) error {
	if err := t.CheckRead(); err != nil {
		return err
	}
	if t.Writable() {
		// fn may write, which would invalidate a live cursor.
		return t.Scan(prefix, storage.ScanOptions{}, func(key string, value []byte) error {
			return fn([]byte(key), value)
		})
	}
	return t.walk([]byte(prefix), []byte(prefix), nil, false, func(k, v []byte) error {
		if v == nil {
			v = []byte{}
		}
		return fn(k, v)
	})
}

// keyArena copies the keys of a Scan out of bbolt's memory into chunks of
// its own, and returns strings that share the chunks' bytes: one
// allocation per chunk instead of one per key, which is most of the cost
// of listing a large folder. A chunk's bytes are never written again
// once a string refers to them, so the strings are as immutable as any.
// Chunks start small and double up to keyChunkMax, so that a Scan that
// stops after a key or two (storage.Children seeking past a folder) keeps
// little memory alive.
type keyArena struct {
	chunk []byte
	next  int // the size of the next chunk
}

const (
	keyChunkMin = 256
	keyChunkMax = 32 << 10
)

// string returns a copy of k as a string.
func (a *keyArena) string(k []byte) string {
	if len(k) == 0 {
		return ""
	}
	if len(k) > cap(a.chunk)-len(a.chunk) {
		if len(k) > keyChunkMax/4 {
			return string(k) // a large key gets an allocation of its own
		}
		a.next = min(max(a.next*2, keyChunkMin), keyChunkMax)
		a.chunk = make([]byte, 0, a.next)
	}
	start := len(a.chunk)
	a.chunk = append(a.chunk, k...)
	return unsafe.String(&a.chunk[start], len(k))
}
