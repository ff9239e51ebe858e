package keel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
)

// The README's first example and the package doc's quickstart: one bbolt
// file, one transaction that writes a key unless it is there.
func Example_quickstart() {
	dir, err := os.MkdirTemp("", "keel-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "keel.db")

	put := func(ctx context.Context) error {
		store, err := boltstore.Open(path, nil) // fsync on every commit
		if err != nil {
			return err
		}
		defer store.Close()
		ctx = keel.WithPrincipal(ctx, keel.Principal{ID: "alice"})
		err = store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			if _, err := tx.Get("greeting"); err == nil {
				return fmt.Errorf("greeting: %w", keel.KindAlreadyExists)
			} else if !errors.Is(err, storage.ErrNotFound) {
				return err
			}
			return tx.Put("greeting", []byte("hello")) // all writes of the closure commit, or none
		})
		switch keel.KindOf(err) {
		case keel.KindNone, keel.KindAlreadyExists:
		default:
			return err
		}
		fmt.Println(keel.KindOf(err))
		return nil
	}
	for range 2 {
		if err := put(context.Background()); err != nil {
			panic(err)
		}
	}
	// Output:
	// no error
	// already exists
}
