package etcdstore_test

import (
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/etcdstore/etcdtest"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

func TestConformance(t *testing.T) {
	client := etcdtest.Client(t)
	storagetest.Run(t, func(t testing.TB) storage.Store {
		return etcdstore.New(client, &etcdstore.Options{Prefix: etcdtest.Prefix()})
	})
}
