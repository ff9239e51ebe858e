package sealstore_test

import (
	"path/filepath"
	"testing"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/sealstore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestConformanceOverMemstore(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store {
		return mustNew(t, memstore.New(nil), sealstore.GenerateKey())
	})
}

func TestConformanceOverBoltstore(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store {
		b, err := boltstore.Open(filepath.Join(t.TempDir(), "keel.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return mustNew(t, b, sealstore.GenerateKey())
	})
}

func TestConformanceOverEtcdstore(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store {
		return mustNew(t, everystore.Etcd(t), sealstore.GenerateKey())
	})
}
