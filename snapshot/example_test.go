package snapshot_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()
	put := func(ctx context.Context, tx storage.Tx) error {
		for _, k := range []string{"users/ada", "users/alan", "groups/admins"} {
			if err := tx.Put(k, []byte("{}")); err != nil {
				return err
			}
		}
		return nil
	}
	if err := store.Update(ctx, put); err != nil {
		panic(err)
	}

	var buf bytes.Buffer
	copied := memstore.New(nil)
	defer copied.Close()
	_, err := snapshot.Save(ctx, store, &buf, nil)
	if err != nil {
		panic(err)
	}
	_, err = snapshot.Restore(ctx, &buf, copied, nil)
	if err != nil {
		panic(err)
	}

	var keys []string
	err = copied.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("", storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			keys = append(keys, key)
			return nil
		})
	})
	fmt.Println(keys, err)
	// Output: [groups/admins users/ada users/alan] <nil>
}

// Migrate copies a store into another, here a part of it, and reports its
// progress after each batch.
func ExampleMigrate() {
	ctx := context.Background()
	from, to := memstore.New(nil), memstore.New(nil)
	defer from.Close()
	defer to.Close()
	for i := range 2500 {
		err := from.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			return tx.Put(fmt.Sprintf("k/%04d", i), []byte("v"))
		})
		if err != nil {
			panic(err)
		}
	}
	res, err := snapshot.Migrate(ctx, from, to, &snapshot.MigrateOptions{
		Prefix: "k/",
		Progress: func(p snapshot.Progress) {
			fmt.Printf("%d/%d keys\n", p.Keys+p.Resumed, p.Total)
		},
	})
	fmt.Println(res.Keys, res.Bytes, err)
	// Output:
	// 0/2500 keys
	// 1000/2500 keys
	// 2000/2500 keys
	// 2500/2500 keys
	// 2500 17500 <nil>
}
