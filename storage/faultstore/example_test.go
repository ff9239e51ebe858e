package faultstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := faultstore.New(memstore.New(nil))
	store.Fail(faultstore.OpCommit, "", 1, errors.New("disk full"))

	err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Put("a", []byte("1"))
	})
	fmt.Println("update:", err)

	err = store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get("a")
		return err
	})
	fmt.Println("stored:", !errors.Is(err, storage.ErrNotFound))
	// Output:
	// update: disk full
	// stored: false
}
