package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// Harness opens a fresh, empty store for one case of the suite. It is called
// from the case's subtest, with that subtest's t; it fails t (t.Fatal) when
// it cannot open the store. The suite closes the store, through t.Cleanup,
// possibly after the case already closed it: calling Close twice must be
// fine.
type Harness func(t testing.TB) storage.Store

// Run runs every conformance case as a named subtest of t, in parallel, each
// over its own store from open.
func Run(t *testing.T, open Harness) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, openStore(t, open))
		})
	}
}

var cases = []struct {
	name string
	run  func(*testing.T, storage.Store)
}{
	{"GetPutDelete", testGetPutDelete},
	{"EmptyKey", testEmptyKey},
	{"Limits", testLimits},
	{"Atomicity", testAtomicity},
	{"ReadYourWrites", testReadYourWrites},
	{"Isolation", testIsolation},
	{"OrderingAndScan", testOrderingAndScan},
	{"ScanWhileWriting", testScanWhileWriting},
	{"CopySemantics", testCopySemantics},
	{"TxDone", testTxDone},
	{"ReadOnly", testReadOnly},
	{"Nested", testNested},
	{"Context", testContext},
	{"Closed", testClosed},
	{"ConcurrentWriters", testConcurrentWriters},
	{"RetrySafe", testRetrySafe},
	{"FailingWriter", testFailingWriter},
	{"Batch", testBatch},
	{"Watch", testWatch},
	{"Size", testSize},
}

// waitLimit bounds every wait for something that could deadlock.
const waitLimit = 10 * time.Second

// openStore opens a store with open and registers its Close.
func openStore(t testing.TB, open Harness) storage.Store {
	t.Helper()
	s := open(t)
	if s == nil {
		t.Fatal("storagetest: the harness returned a nil store")
	}
	t.Cleanup(func() {
		var err error
		if !within(func() { err = s.Close() }) {
			t.Errorf("Close did not return within %v: a transaction of the test is stuck, or Close waits for itself", waitLimit)
			return
		}
		if err != nil {
			t.Errorf("Close at cleanup: %v (Close after Close must return nil)", err)
		}
	})
	return s
}

// within runs f in a goroutine and reports whether it returned within
// waitLimit. f must not call methods of a testing.TB: it may still be
// running after the test ended.
func within(f func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// kv is a key and its value.
type kv struct {
	key, value string
}

func (e kv) String() string { return fmt.Sprintf("%q=%q", e.key, e.value) }

type txFunc = func(ctx context.Context, tx storage.Tx) error

// update runs fn in an Update and fails t when it returns an error.
func update(t testing.TB, s storage.Store, fn txFunc) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// view runs fn in a View and fails t when it returns an error.
func view(t testing.TB, s storage.Store, fn txFunc) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// putAll stores kvs, in as few Updates as the store's limits allow. An
// Update refused as too large all the same (a wrapper may count a few bytes
// per write more than it is given, as a prefix view counts its prefix) is
// tried again with half as many writes.
func putAll(t testing.TB, s storage.Store, kvs ...kv) {
	t.Helper()
	l := s.Limits()
	for len(kvs) > 0 {
		n, size := 0, 0
		for n < len(kvs) {
			sz := len(kvs[n].key) + len(kvs[n].value)
			if n > 0 && (l.MaxTxOps > 0 && n >= l.MaxTxOps || l.MaxTxBytes > 0 && size+sz > l.MaxTxBytes) {
				break
			}
			n++
			size += sz
		}
		for {
			batch := kvs[:n]
			err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				for _, e := range batch {
					if err := tx.Put(e.key, []byte(e.value)); err != nil {
						return fmt.Errorf("Put(%q): %w", e.key, err)
					}
				}
				return nil
			})
			if errors.Is(err, storage.ErrTxTooLarge) && n > 1 {
				n /= 2
				continue
			}
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			break
		}
		kvs = kvs[n:]
	}
}

// get reads key in a View; ok is false when it is missing.
func get(t testing.TB, s storage.Store, key string) (value string, ok bool) {
	t.Helper()
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		v, err := tx.Get(key)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("Get(%q): %w", key, err)
		}
		value, ok = string(v), true
		return nil
	})
	return value, ok
}

// wantValue fails t unless key holds want in a new View.
func wantValue(t testing.TB, s storage.Store, key, want string) {
	t.Helper()
	got, ok := get(t, s, key)
	switch {
	case !ok:
		t.Errorf("Get(%q): not found, want %q", key, want)
	case got != want:
		t.Errorf("Get(%q) = %q, want %q", key, got, want)
	}
}

// wantMissing fails t unless key is missing in a new View.
func wantMissing(t testing.TB, s storage.Store, key string) {
	t.Helper()
	if got, ok := get(t, s, key); ok {
		t.Errorf("Get(%q) = %q, want not found", key, got)
	}
}

// scanAll returns what a Scan visits, in a new View.
func scanAll(t testing.TB, s storage.Store, prefix string, opts storage.ScanOptions) []kv {
	t.Helper()
	var got []kv
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		var err error
		got, err = scanTx(tx, prefix, opts)
		return err
	})
	return got
}

// scanTx returns what a Scan of tx visits.
func scanTx(tx storage.Tx, prefix string, opts storage.ScanOptions) ([]kv, error) {
	var got []kv
	err := tx.Scan(prefix, opts, func(key string, value []byte) error {
		got = append(got, kv{key, string(value)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("Scan(%q, %+v): %w", prefix, opts, err)
	}
	return got, nil
}

// wantScan fails t unless a Scan in a new View visits exactly want.
func wantScan(t testing.TB, s storage.Store, prefix string, opts storage.ScanOptions, want ...kv) {
	t.Helper()
	if got := scanAll(t, s, prefix, opts); !slices.Equal(got, want) {
		t.Errorf("Scan(%q, %+v)\n got %v\nwant %v", prefix, opts, got, want)
	}
}

// wantErr fails t unless err wraps sentinel, and is of kind (by errors.Is
// and by keel.KindOf).
func wantErr(t testing.TB, what string, err, sentinel error, kind keel.Kind) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: nil error, want %v", what, sentinel)
		return
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Errorf("%s: error %q does not wrap %q", what, err, sentinel)
	}
	if !errors.Is(err, kind) {
		t.Errorf("%s: error %q does not wrap keel kind %q", what, err, kind)
	}
	if got := keel.KindOf(err); got != kind {
		t.Errorf("%s: keel.KindOf(%q) = %v, want %v", what, err, got, kind)
	}
}

// noPanic calls f and turns a panic into a failure of t.
func noPanic(t testing.TB, what string, f func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
			err = fmt.Errorf("%s panicked: %v", what, r)
		}
	}()
	return f()
}

// errTest is a closure's own error, which Update and View must return.
var errTest = errors.New("storagetest: error of the closure")
