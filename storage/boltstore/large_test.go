package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
)

// TestLargeValues: a value of keel.LargeValue bytes or more (kept in a
// bucket of its own) reads, sizes, scans, is replaced by a small one and
// replaces it, and is deleted as any other; a file written before, with a
// large value among its neighbours, reads it and writes it anew.
func TestLargeValues(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keel.db")
	// A file as written before: the large value among its neighbours.
	old := bytes.Repeat([]byte("o"), keel.LargeValue+1)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("keel"))
		if err == nil {
			err = b.Put([]byte("a/old"), old)
		}
		return err
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	big := bytes.Repeat([]byte("b"), keel.LargeValue)
	small := []byte("s")
	update := func(fn func(tx storage.Tx) error) {
		t.Helper()
		if err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return fn(tx) }); err != nil {
			t.Fatal(err)
		}
	}
	// want checks the values under a/, in a View and in an Update.
	want := func(what string, values map[string][]byte) {
		t.Helper()
		check := func(tx storage.Tx) error {
			got := map[string][]byte{}
			err := tx.Scan("a/", storage.ScanOptions{}, func(k string, v []byte) error {
				got[k] = v
				return nil
			})
			if err != nil {
				return err
			}
			keys := 0
			if err := tx.Scan("a/", storage.ScanOptions{KeysOnly: true}, func(string, []byte) error { keys++; return nil }); err != nil {
				return err
			}
			if len(got) != len(values) || keys != len(values) {
				t.Errorf("%s: %d values, %d keys scanned, want %d", what, len(got), keys, len(values))
			}
			for k, v := range values {
				g, err := tx.Get(k)
				n, serr := storage.SizeOf(tx, k)
				if err != nil || serr != nil || !bytes.Equal(g, v) || !bytes.Equal(got[k], v) || n != len(v) {
					t.Errorf("%s: %s: Get %d bytes (%v), Scan %d, Size %d (%v); want %d", what, k, len(g), err, len(got[k]), n, serr, len(v))
				}
			}
			return nil
		}
		if err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error { return check(tx) }); err != nil {
			t.Fatal(err)
		}
		update(check)
	}

	want("a file written before", map[string][]byte{"a/old": old})
	update(func(tx storage.Tx) error { return tx.Put("a/old", big) }) // into a bucket of its own
	update(func(tx storage.Tx) error { return tx.Put("a/big", big) })
	update(func(tx storage.Tx) error { return tx.Put("a/c", small) })
	want("large and small", map[string][]byte{"a/old": big, "a/big": big, "a/c": small})
	update(func(tx storage.Tx) error { return tx.Put("a/big", small) })
	update(func(tx storage.Tx) error { return tx.Put("a/c", big) })
	want("each replaced by the other", map[string][]byte{"a/old": big, "a/big": small, "a/c": big})
	update(func(tx storage.Tx) error {
		if err := tx.Delete("a/old"); err != nil {
			return err
		}
		return tx.Delete("a/c")
	})
	want("large ones deleted", map[string][]byte{"a/big": small})
	err = s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get("a/c")
		return err
	})
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Get of a deleted large value: %v, want KindNotFound", err)
	}
}
