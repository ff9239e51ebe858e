package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
)

// lender is the method package snapshot looks for.
type lender interface {
	ScanLent(prefix string, fn func(key, value []byte) error) error
}

// TestScanLent: ScanLent gives, in a View and in an Update, the keys under
// its prefix in order with the values Scan gives (an empty value, and a
// large value kept in a bucket of its own, included); it stops at fn's
// error, and with nil at storage.StopScan; in an Update, fn may write.
func TestScanLent(t *testing.T) {
	s := openTemp(t, &Options{NoSync: true})
	ctx := context.Background()
	want := map[string]string{
		"a/empty": "",
		"a/large": strings.Repeat("L", keel.LargeValue),
		"b":       "outside",
	}
	for i := range 300 {
		want[fmt.Sprintf("a/%03d", i)] = strings.Repeat("v", i)
	}
	err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		for k, v := range want {
			if err := tx.Put(k, []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ key, value string }
	// lent lists what ScanLent gives under "a/", copied, and checks it
	// against Scan.
	lent := func(tx storage.Tx) error {
		var got, scanned []entry
		err := tx.(lender).ScanLent("a/", func(key, value []byte) error {
			if value == nil {
				t.Errorf("%s: a nil value", key)
			}
			got = append(got, entry{string(key), string(value)})
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Scan("a/", storage.ScanOptions{}, func(key string, value []byte) error {
			scanned = append(scanned, entry{key, string(value)})
			return nil
		})
		if err != nil {
			return err
		}
		if len(got) != len(want)-1 || len(got) != len(scanned) {
			t.Fatalf("%d keys lent, %d scanned, want %d", len(got), len(scanned), len(want)-1)
		}
		for i := range got {
			if got[i] != scanned[i] || want[got[i].key] != got[i].value {
				t.Errorf("key %d: lent %.20q, scanned %.20q", i, got[i], scanned[i])
			}
		}

		// Stopped by fn.
		errStop := errors.New("stop")
		n := 0
		err = tx.(lender).ScanLent("a/", func(key, value []byte) error {
			n++
			if n == 3 {
				return errStop
			}
			return nil
		})
		if !errors.Is(err, errStop) || n != 3 {
			t.Errorf("stopped at %d keys with %v, want 3 and the error", n, err)
		}
		n = 0
		err = tx.(lender).ScanLent("a/", func(key, value []byte) error {
			n++
			return storage.StopScan
		})
		if err != nil || n != 1 {
			t.Errorf("StopScan: %d keys, %v", n, err)
		}
		return nil
	}
	if err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error { return lent(tx) }); err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := lent(tx); err != nil {
			return err
		}
		// fn writes while it walks: every key is visited once.
		n := 0
		err := tx.(lender).ScanLent("a/", func(key, value []byte) error {
			n++
			return tx.Put(string(key), append(bytes.Clone(value), 'x'))
		})
		if err != nil || n != len(want)-1 {
			t.Errorf("writing while lending: %d keys, %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A finished transaction lends nothing.
	var kept storage.Tx
	if err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error { kept = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	err = kept.(lender).ScanLent("", func(key, value []byte) error { return nil })
	if !errors.Is(err, storage.ErrTxDone) {
		t.Errorf("after the View: %v, want storage.ErrTxDone", err)
	}
}
