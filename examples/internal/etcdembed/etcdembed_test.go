package etcdembed_test

import (
	"context"
	"testing"

	"github.com/keelhq/keel/examples/internal/etcdembed"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
	"github.com/keelhq/keel/storage/storagetest"
)

// TestConformance runs the storage conformance suite on etcdstore over an
// embedded etcd (the library's tests run it over an etcd process), each
// case on a fresh prefix of one server.
func TestConformance(t *testing.T) {
	srv, err := etcdembed.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	storagetest.Run(t, func(t testing.TB) storage.Store {
		s, err := etcdstore.Open(context.Background(), srv.Endpoints(), &etcdstore.Options{Prefix: etcdtest.Prefix()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
