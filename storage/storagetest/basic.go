package storagetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// testGetPutDelete: round trips, missing keys, deletes, empty values.
func testGetPutDelete(t *testing.T, s storage.Store) {
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("k", []byte("v1")); err != nil {
			return err
		}
		return tx.Put("other", []byte("o"))
	})
	wantValue(t, s, "k", "v1")

	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.Put("k", []byte("v2")) })
	wantValue(t, s, "k", "v2")
	wantValue(t, s, "other", "o")

	// Missing keys, in a View and in an Update.
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		v, err := tx.Get("missing")
		wantErr(t, "Get(missing) in View", err, storage.ErrNotFound, keel.KindNotFound)
		if !errors.Is(err, keel.KindNotFound) {
			t.Errorf("Get(missing): %v does not wrap keel.KindNotFound", err)
		}
		if v != nil {
			t.Errorf("Get(missing) = %q with the error, want nil", v)
		}
		return nil
	})
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get("missing")
		wantErr(t, "Get(missing) in Update", err, storage.ErrNotFound, keel.KindNotFound)
		if err := tx.Delete("missing"); err != nil {
			t.Errorf("Delete(missing) = %v, want nil", err)
		}
		return nil
	})
	wantMissing(t, s, "missing")

	// Delete, then Get in a later transaction.
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.Delete("k") })
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get("k")
		wantErr(t, "Get after Delete", err, storage.ErrNotFound, keel.KindNotFound)
		return nil
	})
	wantValue(t, s, "other", "o")
	update(t, s, func(ctx context.Context, tx storage.Tx) error { return tx.Delete("k") }) // again: not an error

	// Empty values round-trip as empty, from an empty and from a nil slice.
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("empty", []byte{}); err != nil {
			return err
		}
		return tx.Put("nil", nil)
	})
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		for _, key := range []string{"empty", "nil"} {
			v, err := tx.Get(key)
			if err != nil {
				t.Errorf("Get(%q) of an empty value: %v", key, err)
			} else if len(v) != 0 {
				t.Errorf("Get(%q) = %q, want empty", key, v)
			}
		}
		return nil
	})
	wantScan(t, s, "", storage.ScanOptions{}, kv{"empty", ""}, kv{"nil", ""}, kv{"other", "o"})
}

// testEmptyKey: "" is refused by Get, Put and Delete, and nothing changes.
func testEmptyKey(t *testing.T, s storage.Store) {
	putAll(t, s, kv{"k", "v"})
	check := func(what string, err error) {
		t.Helper()
		wantErr(t, what, err, storage.ErrEmptyKey, keel.KindInvalid)
		if !errors.Is(err, keel.KindInvalid) {
			t.Errorf("%s: %v does not wrap keel.KindInvalid", what, err)
		}
	}
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get("")
		check(`Get("") in View`, err)
		return nil
	})
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get("")
		check(`Get("") in Update`, err)
		check(`Put("")`, tx.Put("", []byte("x")))
		check(`Put("", nil)`, tx.Put("", nil))
		check(`Delete("")`, tx.Delete(""))
		_, err = tx.Get("")
		check(`Get("") after Put("")`, err)
		return nil // commit whatever the failed writes left: nothing
	})
	wantScan(t, s, "", storage.ScanOptions{}, kv{"k", "v"})
}

// testReadOnly: writes in a View fail with ErrReadOnly and change nothing.
func testReadOnly(t *testing.T, s storage.Store) {
	putAll(t, s, kv{"k", "v"})
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		wantErr(t, "Put in View", tx.Put("k", []byte("changed")), storage.ErrReadOnly, keel.KindInternal)
		wantErr(t, "Put of a new key in View", tx.Put("new", []byte("n")), storage.ErrReadOnly, keel.KindInternal)
		wantErr(t, "Delete in View", tx.Delete("k"), storage.ErrReadOnly, keel.KindInternal)
		if v, err := tx.Get("k"); err != nil || string(v) != "v" {
			t.Errorf("Get in View after refused writes = %q, %v; want %q", v, err, "v")
		}
		return nil
	})
	wantScan(t, s, "", storage.ScanOptions{}, kv{"k", "v"})
}

// testCopySemantics: values are copied in by Put, and out by Get and Scan.
func testCopySemantics(t *testing.T, s storage.Store) {
	// The slice given to Put, mutated inside the transaction and after it.
	buf := []byte("original")
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("k", buf); err != nil {
			return err
		}
		buf[0] = 'X'
		if v, err := tx.Get("k"); err != nil || string(v) != "original" {
			t.Errorf("Get in Update after mutating the slice given to Put = %q, %v; want %q", v, err, "original")
		}
		return nil
	})
	copy(buf, "mutated!")
	wantValue(t, s, "k", "original")

	// The slice returned by Get, in a View and in an Update.
	for _, run := range []func(context.Context, txFunc) error{s.View, s.Update} {
		if err := run(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			v, err := tx.Get("k")
			if err != nil {
				return err
			}
			copy(v, "XXXX")
			_ = append(v[:1], "YYYYYYYYYYYYYYYYYYYYY"...)
			if v, err := tx.Get("k"); err != nil || string(v) != "original" {
				t.Errorf("Get after mutating what Get returned = %q, %v; want %q", v, err, "original")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	wantValue(t, s, "k", "original")

	// The value given to a Scan callback, in a View and in an Update.
	for _, run := range []func(context.Context, txFunc) error{s.View, s.Update} {
		if err := run(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			n := 0
			err := tx.Scan("", storage.ScanOptions{}, func(key string, value []byte) error {
				n++
				copy(value, "ZZZZ")
				return nil
			})
			if err != nil {
				return err
			}
			if n != 1 {
				t.Errorf("Scan visited %d keys, want 1", n)
			}
			if v, err := tx.Get("k"); err != nil || string(v) != "original" {
				t.Errorf("Get after mutating the value given to Scan = %q, %v; want %q", v, err, "original")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	wantValue(t, s, "k", "original")

	// Two Gets return distinct slices.
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		a, err1 := tx.Get("k")
		b, err2 := tx.Get("k")
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		a[0] = 'Q'
		if !bytes.Equal(b, []byte("original")) {
			t.Errorf("mutating one Get's slice changed another's: %q", b)
		}
		return nil
	})
}

// testTxDone: a Tx kept past its closure fails with ErrTxDone, never panics,
// and writes nothing.
func testTxDone(t *testing.T, s storage.Store) {
	putAll(t, s, kv{"k", "v"})
	var (
		viewTx, updateTx   storage.Tx
		viewCtx, updateCtx context.Context
	)
	view(t, s, func(ctx context.Context, tx storage.Tx) error {
		viewTx, viewCtx = tx, ctx
		return nil
	})
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		updateTx, updateCtx = tx, ctx
		return nil
	})
	for _, c := range []struct {
		name string
		tx   storage.Tx
		ctx  context.Context
	}{{"View", viewTx, viewCtx}, {"Update", updateTx, updateCtx}} {
		err := noPanic(t, c.name+": Get", func() error { _, err := c.tx.Get("k"); return err })
		wantErr(t, c.name+": Get after the closure", err, storage.ErrTxDone, keel.KindInternal)
		err = noPanic(t, c.name+": Get of a missing key", func() error { _, err := c.tx.Get("missing"); return err })
		wantErr(t, c.name+": Get of a missing key after the closure", err, storage.ErrTxDone, keel.KindInternal)
		err = noPanic(t, c.name+": Put", func() error { return c.tx.Put("late", []byte("x")) })
		wantErr(t, c.name+": Put after the closure", err, storage.ErrTxDone, keel.KindInternal)
		err = noPanic(t, c.name+": Delete", func() error { return c.tx.Delete("k") })
		wantErr(t, c.name+": Delete after the closure", err, storage.ErrTxDone, keel.KindInternal)
		called := false
		err = noPanic(t, c.name+": Scan", func() error {
			return c.tx.Scan("", storage.ScanOptions{}, func(string, []byte) error { called = true; return nil })
		})
		wantErr(t, c.name+": Scan after the closure", err, storage.ErrTxDone, keel.KindInternal)
		if called {
			t.Errorf("%s: Scan after the closure called its callback", c.name)
		}

		// The kept ctx stays a usable context. A transaction started with
		// it may succeed (its transaction is over) or be refused as
		// misuse of a transaction's context; it must not hang.
		_ = c.ctx.Err()
		_ = c.ctx.Value(struct{}{})
		var viewErr, updateErr error
		if !within(func() {
			viewErr = s.View(c.ctx, func(context.Context, storage.Tx) error { return nil })
			updateErr = s.Update(c.ctx, func(context.Context, storage.Tx) error { return nil })
		}) {
			t.Fatalf("%s: a transaction started with the ctx of a finished transaction did not return within %v", c.name, waitLimit)
		}
		for _, err := range []error{viewErr, updateErr} {
			if err != nil && keel.KindOf(err) != keel.KindInternal {
				t.Errorf("%s: transaction started with the ctx of a finished one: %v, want nil or an error of kind %v", c.name, err, keel.KindInternal)
			}
		}
	}
	wantScan(t, s, "", storage.ScanOptions{}, kv{"k", "v"})
}

// testClosed: after Close, transactions fail with ErrClosed; Close again is
// nil.
func testClosed(t *testing.T, s storage.Store) {
	putAll(t, s, kv{"k", "v"})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	called := false
	fn := func(context.Context, storage.Tx) error { called = true; return nil }
	wantErr(t, "View after Close", s.View(context.Background(), fn), storage.ErrClosed, keel.KindUnavailable)
	wantErr(t, "Update after Close", s.Update(context.Background(), fn), storage.ErrClosed, keel.KindUnavailable)
	if err := s.View(context.Background(), fn); !errors.Is(err, keel.KindUnavailable) {
		t.Errorf("View after Close: %v does not wrap keel.KindUnavailable", err)
	}
	if called {
		t.Error("a closure ran after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}
