package boltstore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/keelhq/keel/storage"
)

// leafFill returns the part of the store's leaf pages that its keys and
// values fill.
func leafFill(t *testing.T, s *Store) float64 {
	t.Helper()
	var st bolt.BucketStats
	err := s.db.View(func(btx *bolt.Tx) error {
		st = btx.Bucket(bucketName).Stats()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.LeafPageN == 0 {
		t.Fatal("no leaf page")
	}
	return float64(st.LeafInuse) / float64(st.LeafPageN*s.db.Info().PageSize)
}

// TestKeysInOrderFillTheirPages: keys written in order, many to a commit
// (the records of leases issued together, kv writes of new names), fill
// the leaf pages they end up in to three quarters (fillPercent), not to
// bbolt's default half: a commit then writes fewer pages for the same keys.
func TestKeysInOrderFillTheirPages(t *testing.T) {
	s := openTemp(t, &Options{NoSync: true})
	ctx := context.Background()
	value := make([]byte, 150)
	const commits, perCommit = 60, 64
	for c := range commits {
		// perCommit concurrent Updates, grouped into few commits.
		var wg sync.WaitGroup
		for i := range perCommit {
			key := fmt.Sprintf("lease/id/%08d", c*perCommit+i)
			wg.Go(func() {
				err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
					return tx.Put(key, value)
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	// Split at half (bbolt's default), the pages end half full.
	if fill := leafFill(t, s); fill < 0.65 {
		t.Errorf("leaf pages filled to %.2f, want at least 0.65", fill)
	}
}
