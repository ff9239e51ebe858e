package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
)

func Example() {
	dir, err := os.MkdirTemp("", "keel-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "keel.db")

	store, err := boltstore.Open(path, nil)
	if err != nil {
		panic(err)
	}
	// Update returns once the write is on disk.
	err = store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.Put("greeting", []byte("hello"))
	})
	if err != nil {
		panic(err)
	}
	store.Close()

	// It is there after reopening.
	store, err = boltstore.Open(path, nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	err = store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		v, err := tx.Get("greeting")
		fmt.Printf("%s\n", v)
		return err
	})
	if err != nil {
		panic(err)
	}
	// Output: hello
}
