package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// newPair returns two Stores with separate clients on one etcd and one
// fresh prefix: two processes of one deployment.
func newPair(t *testing.T) (*etcdstore.Store, *etcdstore.Store) {
	t.Helper()
	prefix := etcdtest.Prefix()
	a := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: prefix})
	b := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: prefix})
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func put(t *testing.T, s storage.Store, kvs ...string) {
	t.Helper()
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for i := 0; i < len(kvs); i += 2 {
			if err := tx.Put(kvs[i], []byte(kvs[i+1])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func keys(t *testing.T, s storage.Store, prefix string) []string {
	t.Helper()
	var got []string
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		got = nil
		return tx.Scan(prefix, storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
			got = append(got, k)
			return nil
		})
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	return got
}

// TestTwoStoresLoseNoUpdate: two Stores (two clients, as two processes
// would have) increment one counter concurrently; every increment counts.
func TestTwoStoresLoseNoUpdate(t *testing.T) {
	t.Parallel()
	a, b := newPair(t)
	const goroutines, increments = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines)
	for _, s := range []*etcdstore.Store{a, b} {
		for range goroutines {
			wg.Go(func() {
				for range increments {
					err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
						n := 0
						v, err := tx.Get("ctr")
						if err == nil {
							n, _ = strconv.Atoi(string(v))
						} else if !errors.Is(err, storage.ErrNotFound) {
							return err
						}
						return tx.Put("ctr", []byte(strconv.Itoa(n+1)))
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Update: %v", err)
	}
	err := b.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		v, err := tx.Get("ctr")
		if err != nil {
			return err
		}
		if want := strconv.Itoa(2 * goroutines * increments); string(v) != want {
			t.Errorf("counter = %s, want %s", v, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConflictRetried: a commit of store a made stale by a write of store
// b, between a's read and a's commit, is not applied: the closure runs
// again on the new state, and nothing of its first run remains.
func TestConflictRetried(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		read  func(tx storage.Tx) (string, error)
		other func(t *testing.T, b storage.Store)
	}{
		{"Get changed", func(tx storage.Tx) (string, error) {
			v, err := tx.Get("k/x")
			return string(v), err
		}, func(t *testing.T, b storage.Store) { put(t, b, "k/x", "other") }},
		{"Get of a missing key created", func(tx storage.Tx) (string, error) {
			v, err := tx.Get("k/missing")
			if errors.Is(err, storage.ErrNotFound) {
				return "none", nil
			}
			return string(v), err
		}, func(t *testing.T, b storage.Store) { put(t, b, "k/missing", "created") }},
		{"Scan then key created", scanKeys, func(t *testing.T, b storage.Store) { put(t, b, "k/new", "n") }},
		{"Scan then key deleted", scanKeys, func(t *testing.T, b storage.Store) {
			if err := b.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				return tx.Delete("k/x")
			}); err != nil {
				t.Fatal(err)
			}
		}},
		{"Scan then key changed", scanKeys, func(t *testing.T, b storage.Store) { put(t, b, "k/y", "changed") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a, b := newPair(t)
			put(t, a, "k/x", "1", "k/y", "2")
			calls := 0
			var seen []string
			err := a.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				calls++
				got, err := c.read(tx)
				if err != nil {
					return err
				}
				seen = append(seen, got)
				if calls == 1 {
					if err := tx.Put("trace/first", []byte("x")); err != nil {
						return err
					}
					c.other(t, b)
				}
				return tx.Put("result", []byte(got))
			})
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			if calls != 2 {
				t.Fatalf("closure ran %d times (saw %q), want 2: the conflict went unnoticed", calls, seen)
			}
			if got := keys(t, b, "trace/"); len(got) != 0 {
				t.Errorf("the first, conflicting run left %q", got)
			}
			err = b.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
				v, err := tx.Get("result")
				if err == nil && string(v) != seen[1] {
					t.Errorf("result = %q, want %q from the second run", v, seen[1])
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func scanKeys(tx storage.Tx) (string, error) {
	var ks []string
	err := tx.Scan("k/", storage.ScanOptions{}, func(k string, v []byte) error {
		ks = append(ks, k+"="+string(v))
		return nil
	})
	return strings.Join(ks, ","), err
}

// TestNoConflictOutsideReads: writes of others to keys and ranges the
// closure did not read do not make it run again.
func TestNoConflictOutsideReads(t *testing.T) {
	t.Parallel()
	a, b := newPair(t)
	put(t, a, "k/a", "1", "k/b", "2", "k/c", "3", "z", "0")
	calls := 0
	err := a.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		calls++
		// A scan stopped at k/b reads k/a and k/b only.
		err := tx.Scan("k/", storage.ScanOptions{}, func(k string, _ []byte) error {
			if k == "k/b" {
				return storage.StopScan
			}
			return nil
		})
		if err != nil {
			return err
		}
		if calls == 1 {
			put(t, b, "k/c", "changed", "k/d", "new", "z", "1", "other", "o")
		}
		return tx.Put("z", []byte("mine"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("closure ran %d times, want 1", calls)
	}
}

// TestConflictBound: a closure that always conflicts fails with
// keel.KindConflict after MaxRetries runs again, and leaves nothing.
func TestConflictBound(t *testing.T) {
	t.Parallel()
	prefix := etcdtest.Prefix()
	a := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: prefix, MaxRetries: 3})
	b := etcdstore.New(etcdtest.Client(t), &etcdstore.Options{Prefix: prefix})
	calls := 0
	err := a.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		calls++
		if _, err := tx.Get("k"); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		put(t, b, "k", strconv.Itoa(calls))
		return tx.Put("mine", []byte("x"))
	})
	if !errors.Is(err, keel.KindConflict) || keel.KindOf(err) != keel.KindConflict {
		t.Fatalf("Update = %v, want keel.KindConflict", err)
	}
	if calls != 4 {
		t.Errorf("closure ran %d times, want 1 + MaxRetries (3)", calls)
	}
	if got := keys(t, b, "mine"); len(got) != 0 {
		t.Errorf("a failed Update left %q", got)
	}
}

// TestTooManyReads: an Update that read more keys than etcd compares in
// one commit fails with ErrTxTooLarge before sending, and writes nothing.
func TestTooManyReads(t *testing.T) {
	t.Parallel()
	a, _ := newPair(t)
	var kvs []string
	for i := range 128 + 10 {
		kvs = append(kvs, fmt.Sprintf("r/%03d", i), "v")
	}
	put(t, a, kvs[:200]...)
	put(t, a, kvs[200:]...)
	err := a.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Scan("r/", storage.ScanOptions{KeysOnly: true}, func(string, []byte) error { return nil }); err != nil {
			return err
		}
		return tx.Put("w", []byte("x"))
	})
	if !errors.Is(err, storage.ErrTxTooLarge) || keel.KindOf(err) != keel.KindTooLarge {
		t.Fatalf("Update = %v, want ErrTxTooLarge", err)
	}
	if got := keys(t, a, "w"); len(got) != 0 {
		t.Errorf("a failed Update left %q", got)
	}
	// Reading as much without writing is fine: nothing to check.
	err = a.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("r/", storage.ScanOptions{}, func(string, []byte) error { return nil })
	})
	if err != nil {
		t.Errorf("a read-only Update: %v", err)
	}
}

// TestScanPagesMerge: a scan over more keys than one range request returns
// merges the transaction's writes, in order, across pages.
func TestScanPagesMerge(t *testing.T) {
	t.Parallel()
	a, _ := newPair(t)
	var want []string
	for batch := range 6 {
		var kvs []string
		for i := range 100 {
			k := fmt.Sprintf("p/%04d", 2*(batch*100+i))
			kvs = append(kvs, k, "v")
		}
		put(t, a, kvs...)
	}
	err := a.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		// Odd keys are the transaction's; every twentieth even key is deleted.
		for i := range 1200 {
			k := fmt.Sprintf("p/%04d", i)
			switch {
			case i%2 == 1 && i%24 == 1:
				if err := tx.Put(k, []byte("mine")); err != nil {
					return err
				}
			case i%2 == 0 && i%40 == 0:
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
		}
		for i := range 1200 {
			if i%2 == 1 && i%24 == 1 || i%2 == 0 && i%40 != 0 {
				want = append(want, fmt.Sprintf("p/%04d", i))
			}
		}
		var got []string
		err := tx.Scan("p/", storage.ScanOptions{KeysOnly: true}, func(k string, _ []byte) error {
			got = append(got, k)
			return nil
		})
		if err != nil {
			return err
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("Scan in the Update visited %d keys, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatalf("Update = %v", err)
	}
	if got := keys(t, a, "p/"); len(got) != 600 {
		t.Errorf("after a rolled-back Update, %d keys, want 600", len(got))
	}
}

// TestPrefixesIsolated: stores of two prefixes on one etcd do not see each
// other's keys.
func TestPrefixesIsolated(t *testing.T) {
	t.Parallel()
	client := etcdtest.Client(t)
	p := etcdtest.Prefix()
	a := etcdstore.New(client, &etcdstore.Options{Prefix: p + "a/"})
	b := etcdstore.New(client, &etcdstore.Options{Prefix: p + "a"})
	put(t, a, "k", "a")
	put(t, b, "x", "b")
	if got := keys(t, a, ""); strings.Join(got, ",") != "k" {
		t.Errorf("store a sees %q, want [k]", got)
	}
	if got := keys(t, b, ""); len(got) != 2 {
		t.Errorf("store b (prefix of a's prefix) sees %q: it includes a's keys, as documented", got)
	}
}

// TestUnavailable: a store whose etcd cannot be reached fails with
// keel.KindUnavailable, without waiting for the caller's ctx.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := etcdstore.Open(ctx, []string{"http://127.0.0.1:1"}, &etcdstore.Options{DialTimeout: 200 * time.Millisecond})
	if !errors.Is(err, keel.KindUnavailable) {
		t.Errorf("Open of a closed port = %v, want keel.KindUnavailable", err)
	}
}
