package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/keelhq/keel/storage"
)

// TestGetAllocatesItsCopyOnly: Get in a transaction allocates the copy of
// the value it returns and nothing else: it seeks the transaction's one
// cursor with the key's own bytes (bbolt's Bucket.Get made a cursor and
// grew its stack per call, and the key was copied to bytes).
func TestGetAllocatesItsCopyOnly(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "a.db"), &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const n = 2000
	keys := make([]string, n)
	err = s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		for i := range keys {
			keys[i] = fmt.Sprintf("lease/id/ldap/creds/app/%08d", i)
			if err := tx.Put(keys[i], []byte("a record of some length")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"View", "Update"} {
		run := s.View
		if name == "Update" {
			run = s.Update
		}
		var allocs float64
		err := run(ctx, func(ctx context.Context, tx storage.Tx) error {
			i := 0
			allocs = testing.AllocsPerRun(200, func() {
				if _, err := tx.Get(keys[i*7%n]); err != nil {
					t.Fatal(err)
				}
				i++
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if allocs > 1 {
			t.Errorf("Get in a %s: %.1f allocations, want 1 (the value's copy)", name, allocs)
		}
	}
}
