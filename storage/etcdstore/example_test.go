package etcdstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
)

// Example opens a Store on an etcd cluster, writes a key and reads it
// back. (go test compiles it but does not run it: it needs an etcd at that
// address. The tests start theirs with etcdtest.)
func Example() {
	endpoints := []string{"http://127.0.0.1:2379"} // your etcd cluster's client URLs
	ctx := context.Background()
	s, err := etcdstore.Open(ctx, endpoints, &etcdstore.Options{Prefix: "example/"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	err = s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Put("greeting", []byte("hello"))
	})
	if err != nil {
		log.Fatal(err)
	}
	err = s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		v, err := tx.Get("greeting")
		if err != nil {
			return err
		}
		fmt.Println(string(v))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
