package etcdstore_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
)

// Example starts an embedded etcd, opens a Store on it, and writes then
// reads a key.
func Example() {
	dir, err := os.MkdirTemp("", "keel-etcd-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := etcdtest.Start(dir) // in production: an etcd cluster
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	s, err := etcdstore.Open(ctx, srv.Endpoints(), &etcdstore.Options{Prefix: "example/"})
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
	// Output: hello
}
