package memstore_test

import (
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store {
		return memstore.New(nil)
	})
}

// TestConformanceSmallLimits runs the suite over limits small enough that
// every one of them, MaxTxOps included, is tested at its boundary.
func TestConformanceSmallLimits(t *testing.T) {
	limits := storage.Limits{MaxKeySize: 64, MaxValueSize: 128, MaxTxOps: 32, MaxTxBytes: 2048, MaxTxReads: 32}
	storagetest.Run(t, func(t testing.TB) storage.Store {
		s := memstore.New(&memstore.Options{Limits: limits})
		if got := s.Limits(); got != limits {
			t.Fatalf("Limits() = %+v, want the %+v given to New", got, limits)
		}
		return s
	})
}
