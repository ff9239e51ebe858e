package storage_test

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

	// All writes of one Update commit together, or none do.
	err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		for _, k := range []string{"users/ada", "users/alan", "users/grace", "groups/admins"} {
			if err := tx.Put(k, []byte("{}")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}

	// Pages of two keys under a prefix: each page starts after the last
	// key of the previous one.
	after := ""
	for page := 1; ; page++ {
		var keys []string
		err := store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			return tx.Scan("users/", storage.ScanOptions{After: after, KeysOnly: true}, func(key string, _ []byte) error {
				keys = append(keys, key)
				if len(keys) == 2 {
					return storage.StopScan
				}
				return nil
			})
		})
		if err != nil {
			panic(err)
		}
		if len(keys) == 0 {
			break
		}
		fmt.Println("page", page, keys)
		after = keys[len(keys)-1]
	}

	// A missing key is storage.ErrNotFound, from every store alike.
	err = store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.Get("users/nobody")
		return err
	})
	fmt.Println(errors.Is(err, storage.ErrNotFound))
	// Output:
	// page 1 [users/ada users/alan]
	// page 2 [users/grace]
	// true
}

func ExampleSub() {
	ctx := context.Background()
	store := memstore.New(nil)
	kv := storage.Sub(store, "kv/secret/")

	err := kv.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Put("db", []byte("s3cr3t"))
	})
	if err != nil {
		panic(err)
	}
	// The view's key "db" is "kv/secret/db" in the store.
	err = store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		v, err := tx.Get("kv/secret/db")
		fmt.Printf("%s %v\n", v, err)
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output: s3cr3t <nil>
}

// A worker learns of the keys committed under its prefix, by this process
// or (on etcd) by any other, and wakes instead of polling.
func ExampleWatch() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()

	woken := make(chan string, 1)
	stop, err := storage.Watch(ctx, store, "due/", func(key string) { woken <- key })
	if err != nil {
		panic(err)
	}
	defer stop()
	err = store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Put("due/0001", nil)
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(<-woken)
	// Output:
	// due/0001
}
