package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/boltstore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "keel.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestConformanceSmallLimits(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "keel.db"), &boltstore.Options{
			Limits: storage.Limits{MaxKeySize: 64, MaxValueSize: 128, MaxTxOps: 32, MaxTxBytes: 2048, MaxTxReads: 32},
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
