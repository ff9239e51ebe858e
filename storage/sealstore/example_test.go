package sealstore_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/sealstore"
)

func Example() {
	ctx := context.Background()
	disk := memstore.New(nil) // in a program: boltstore.Open(...)
	key := sealstore.GenerateKey()
	store, err := sealstore.New(disk, key, nil)
	if err != nil {
		panic(err)
	}

	err = store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Put("ldap/static-role/app", []byte("password=hunter2"))
	})
	if err != nil {
		panic(err)
	}

	_ = disk.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		v, _ := tx.Get("ldap/static-role/app")
		fmt.Println("in clear on disk:", bytes.Contains(v, []byte("hunter2")))
		return nil
	})
	_ = store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		v, _ := tx.Get("ldap/static-role/app")
		fmt.Println("read through the sealed store:", string(v))
		return nil
	})
	// Output:
	// in clear on disk: false
	// read through the sealed store: password=hunter2
}
