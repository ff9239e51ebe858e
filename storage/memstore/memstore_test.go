package memstore_test

import (
	"context"
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

// An Update allocates its transaction and its writer together, and no
// closure of its own (issue 32: one per kv write): a Put of one key in a
// one-leaf tree costs the transaction, the leaf's copy and the value's.
func TestUpdateOfOneKeyAllocatesThree(t *testing.T) {
	s := memstore.New(nil)
	ctx := context.Background()
	v := []byte("value")
	put := func(_ context.Context, tx storage.Tx) error { return tx.Put("a", v) }
	if err := s.Update(ctx, put); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = s.Update(ctx, put) }); allocs > 3 {
		t.Errorf("Update allocates %v times, want at most 3", allocs)
	}
}
