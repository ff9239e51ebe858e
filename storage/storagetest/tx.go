package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// atomicityState is what testAtomicity starts from, and what every failed
// Update must leave.
var atomicityState = []kv{{"at/del", "d"}, {"at/x", "old"}}

// writeAtomicity makes the writes testAtomicity expects to be undone.
func writeAtomicity(tx storage.Tx) error {
	for _, k := range []string{"at/1", "at/2", "at/3"} {
		if err := tx.Put(k, []byte("new")); err != nil {
			return err
		}
	}
	if err := tx.Put("at/x", []byte("new")); err != nil {
		return err
	}
	return tx.Delete("at/del")
}

// testAtomicity: an Update whose closure fails or panics stores nothing.
func testAtomicity(t *testing.T, s storage.Store) {
	putAll(t, s, atomicityState...)

	// The closure's error.
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		if err := writeAtomicity(tx); err != nil {
			t.Errorf("writes before the closure's error: %v", err)
		}
		return fmt.Errorf("wrapped: %w", errTest)
	})
	if !errors.Is(err, errTest) {
		t.Errorf("Update whose closure failed returned %v, want the closure's error", err)
	}
	wantScan(t, s, "at/", storage.ScanOptions{}, atomicityState...)

	// A panic of the closure reaches the caller, and undoes the writes.
	type panicValue struct{ s string }
	recovered := func() (r any) {
		defer func() { r = recover() }()
		_ = s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			if err := writeAtomicity(tx); err != nil {
				t.Errorf("writes before the panic: %v", err)
			}
			panic(panicValue{"boom"})
		})
		return nil
	}()
	if recovered != (panicValue{"boom"}) {
		t.Errorf("Update whose closure panicked: recovered %v, want the closure's panic value", recovered)
	}
	wantScan(t, s, "at/", storage.ScanOptions{}, atomicityState...)

	// So does a panic in a View.
	recovered = func() (r any) {
		defer func() { r = recover() }()
		_ = s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			panic(panicValue{"view"})
		})
		return nil
	}()
	if recovered != (panicValue{"view"}) {
		t.Errorf("View whose closure panicked: recovered %v, want the closure's panic value", recovered)
	}

	// The store still works, for readers and writers.
	var ok bool
	if !within(func() {
		ok = s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			return tx.Put("at/after", []byte("a"))
		}) == nil
	}) {
		t.Fatalf("Update after a panicking Update did not return within %v: the panic left a lock held", waitLimit)
	}
	if !ok {
		t.Error("Update after a panicking Update failed")
	}
	wantScan(t, s, "at/", storage.ScanOptions{}, kv{"at/after", "a"}, atomicityState[0], atomicityState[1])
}

// testReadYourWrites: inside an Update, Get and Scan see the transaction's
// own writes.
func testReadYourWrites(t *testing.T, s storage.Store) {
	putAll(t, s, kv{"r/a", "1"}, kv{"r/b", "1"}, kv{"r/d", "1"})
	want := []kv{{"r/b", "2"}, {"r/c", "new"}, {"r/d", "1"}}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		for _, w := range []struct{ key, value string }{{"r/c", "new"}, {"r/b", "2"}, {"r/e", "gone"}} {
			if err := tx.Put(w.key, []byte(w.value)); err != nil {
				return err
			}
		}
		for _, k := range []string{"r/a", "r/e"} {
			if err := tx.Delete(k); err != nil {
				return err
			}
		}
		for _, w := range want {
			if v, err := tx.Get(w.key); err != nil || string(v) != w.value {
				t.Errorf("Get(%q) in the Update that wrote it = %q, %v; want %q", w.key, v, err, w.value)
			}
		}
		for _, k := range []string{"r/a", "r/e"} {
			_, err := tx.Get(k)
			wantErr(t, fmt.Sprintf("Get(%q) in the Update that deleted it", k), err, storage.ErrNotFound, keel.KindNotFound)
		}
		got, err := scanTx(tx, "r/", storage.ScanOptions{})
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Scan in the Update that wrote\n got %v\nwant %v", got, want)
		}
		got, err = scanTx(tx, "r/", storage.ScanOptions{After: "r/b", KeysOnly: true})
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint([]kv{{"r/c", ""}, {"r/d", ""}}) {
			t.Errorf("Scan(After r/b, KeysOnly) in the Update that wrote: got %v, want r/c and r/d", got)
		}
		return nil
	})
	wantScan(t, s, "r/", storage.ScanOptions{}, want...)
}

// testIsolation: a View keeps its snapshot while an Update commits.
func testIsolation(t *testing.T, s storage.Store) {
	before := []kv{{"iso/a", "v1"}, {"iso/b", "b"}, {"iso/c", "c"}}
	after := []kv{{"iso/a", "v2"}, {"iso/c", "c"}, {"iso/d", "d"}}
	putAll(t, s, before...)

	writerDone := make(chan error, 1)
	var startWriter sync.Once
	writer := func() {
		writerDone <- s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			if err := tx.Put("iso/a", []byte("v2")); err != nil {
				return err
			}
			if err := tx.Delete("iso/b"); err != nil {
				return err
			}
			return tx.Put("iso/d", []byte("d"))
		})
	}
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	writerFinished := false
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		if v, err := tx.Get("iso/a"); err != nil || string(v) != "v1" {
			t.Fatalf("Get(iso/a) at the start of the View = %q, %v; want v1", v, err)
		}
		startWriter.Do(func() { go writer() })
		select {
		case err := <-writerDone:
			writerFinished = true
			if err != nil {
				t.Fatalf("Update while a View is open: %v", err)
			}
		case <-timer.C:
			t.Errorf("an Update did not commit within %v while a View was open: the store must let writers commit while Views run "+
				"(with bbolt: a commit that grows the memory map waits for open read transactions; see bolt.Options.InitialMmapSize)", waitLimit)
			return nil
		}
		if v, err := tx.Get("iso/a"); err != nil || string(v) != "v1" {
			t.Errorf("Get(iso/a) in a View, after an Update committed v2 = %q, %v; want v1, the View's snapshot", v, err)
		}
		if v, err := tx.Get("iso/b"); err != nil || string(v) != "b" {
			t.Errorf("Get(iso/b) in a View, after an Update deleted it = %q, %v; want b, the View's snapshot", v, err)
		}
		if v, err := tx.Get("iso/d"); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Get(iso/d) in a View, after an Update created it = %q, %v; want not found, the View's snapshot", v, err)
		}
		got, err := scanTx(tx, "iso/", storage.ScanOptions{})
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(before) {
			t.Errorf("Scan in a View, after an Update committed\n got %v\nwant %v, the View's snapshot", got, before)
		}
		return nil
	})
	if !writerFinished {
		if !within(func() { <-writerDone }) {
			t.Fatalf("the Update did not commit within %v after the View ended", waitLimit)
		}
	}
	wantScan(t, s, "iso/", storage.ScanOptions{}, after...)
}

// testNested: a transaction started with the ctx of a running one of the
// same store fails with ErrNestedTx instead of deadlocking.
func testNested(t *testing.T, s storage.Store) {
	putAll(t, s, kv{"n/k", "v"})
	type result struct{ view, update error }
	nested := func(ctx context.Context) (r result, called bool) {
		fn := func(context.Context, storage.Tx) error { called = true; return nil }
		r.view = s.View(ctx, fn)
		r.update = s.Update(ctx, fn)
		return r, called
	}
	check := func(outer string, r result, called bool) {
		t.Helper()
		wantErr(t, "View nested in "+outer, r.view, storage.ErrNestedTx, keel.KindInternal)
		wantErr(t, "Update nested in "+outer, r.update, storage.ErrNestedTx, keel.KindInternal)
		if called {
			t.Errorf("the closure of a transaction nested in %s ran", outer)
		}
	}

	var (
		inView, inUpdate         result
		calledView, calledUpdate bool
		viewErr, updateErr       error
	)
	if !within(func() {
		viewErr = s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			inView, calledView = nested(ctx)
			return nil
		})
	}) {
		t.Fatalf("a transaction nested in a View did not return within %v: it deadlocks instead of failing with ErrNestedTx", waitLimit)
	}
	if viewErr != nil {
		t.Errorf("View around nested transactions: %v", viewErr)
	}
	check("a View", inView, calledView)

	if !within(func() {
		updateErr = s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			inUpdate, calledUpdate = nested(ctx)
			return tx.Put("n/k", []byte("outer"))
		})
	}) {
		t.Fatalf("a transaction nested in an Update did not return within %v: it deadlocks instead of failing with ErrNestedTx", waitLimit)
	}
	if updateErr != nil {
		t.Errorf("Update around nested transactions: %v, want it to commit", updateErr)
	}
	check("an Update", inUpdate, calledUpdate)
	wantValue(t, s, "n/k", "outer")

	// A context derived from the closure's ctx carries the transaction too.
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		derived, cancel := context.WithCancel(ctx)
		defer cancel()
		var r result
		var called bool
		if !within(func() { r, called = nested(derived) }) {
			t.Fatalf("a transaction started with a ctx derived from an Update's did not return within %v", waitLimit)
		}
		check("an Update (derived ctx)", r, called)
		return nil
	})
}

// testContext: canceled and expired contexts stop transactions and their
// commits.
func testContext(t *testing.T, s storage.Store) {
	putAll(t, s, kv{"c/k", "v"})

	// Canceled before the transaction: fn is not called.
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	fn := func(context.Context, storage.Tx) error { called = true; return nil }
	for name, run := range map[string]func(context.Context, txFunc) error{"View": s.View, "Update": s.Update} {
		err := run(canceled, fn)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled ctx = %v, want context.Canceled", name, err)
		}
		if k := keel.KindOf(err); k != keel.KindCanceled {
			t.Errorf("%s with a canceled ctx: KindOf = %v, want %v", name, k, keel.KindCanceled)
		}
	}
	if called {
		t.Error("a closure ran with a canceled ctx")
	}

	// Canceled inside the closure: nothing is committed, whether the
	// closure returns the error of its next write or ignores it.
	for _, returnPutErr := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := tx.Put("c/before", []byte("b")); err != nil {
				return err
			}
			if err := tx.Put("c/k", []byte("changed")); err != nil {
				return err
			}
			cancel()
			err := tx.Put("c/after", []byte("a"))
			if returnPutErr {
				return err
			}
			return nil
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Update whose ctx was canceled in the closure (closure returns the Put's error: %v) = %v, want context.Canceled", returnPutErr, err)
		}
		wantScan(t, s, "c/", storage.ScanOptions{}, kv{"c/k", "v"})
	}

	// Canceled inside the closure, which returns nil without writing after.
	ctx, cancel := context.WithCancel(context.Background())
	err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("c/k", []byte("changed")); err != nil {
			return err
		}
		cancel()
		return nil
	})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Update whose ctx was canceled as its closure returned nil = %v, want context.Canceled", err)
	}
	wantScan(t, s, "c/", storage.ScanOptions{}, kv{"c/k", "v"})

	// A deadline already past.
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	called = false
	for name, run := range map[string]func(context.Context, txFunc) error{"View": s.View, "Update": s.Update} {
		err := run(past, fn)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with an expired ctx = %v, want context.DeadlineExceeded", name, err)
		}
		if k := keel.KindOf(err); k != keel.KindDeadlineExceeded {
			t.Errorf("%s with an expired ctx: KindOf = %v, want %v", name, k, keel.KindDeadlineExceeded)
		}
	}
	if called {
		t.Error("a closure ran with an expired ctx")
	}

	// A deadline that passes inside the closure.
	soon, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = s.Update(soon, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("c/k", []byte("late")); err != nil {
			return err
		}
		<-ctx.Done()
		_ = tx.Put("c/late", []byte("late"))
		return nil
	})
	if k := keel.KindOf(err); k != keel.KindDeadlineExceeded {
		t.Errorf("Update whose deadline passed in the closure = %v (kind %v), want kind %v", err, k, keel.KindDeadlineExceeded)
	}
	wantScan(t, s, "c/", storage.ScanOptions{}, kv{"c/k", "v"})
}
