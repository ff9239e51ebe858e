package memstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()

	// A failed Update leaves nothing behind.
	err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("a", []byte("1")); err != nil {
			return err
		}
		return errors.New("changed my mind")
	})
	fmt.Println(err)

	err = store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get("a")
		return err
	})
	fmt.Println(errors.Is(err, storage.ErrNotFound))
	// Output:
	// changed my mind
	// true
}
