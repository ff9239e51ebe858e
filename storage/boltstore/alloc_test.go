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

// TestGroupedUpdatesShareTheirState: the Updates of one commit share one
// allocation of their transactions and one cursor (made by the first Get or
// Delete), not a transaction and a cursor each.
func TestGroupedUpdatesShareTheirState(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "a.db"), &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	value := []byte("a record of some length")
	batch := func(n, round int) []*call {
		calls := make([]*call, n)
		for i := range calls {
			key := fmt.Sprintf("k/%04d/%03d", round, i)
			calls[i] = &call{ctx: context.Background(), done: make(chan outcome, 1), fn: func(ctx context.Context, tx storage.Tx) error {
				if _, err := tx.Get(key); err == nil {
					return fmt.Errorf("%s exists", key)
				}
				return tx.Put(key, value)
			}}
		}
		return calls
	}
	// The allocations of a commit of n Updates, measured on batches made
	// beforehand, each committed once.
	allocs := func(n int) float64 {
		const runs = 50
		batches := make([][]*call, runs+1) // AllocsPerRun runs once more
		for i := range batches {
			batches[i] = batch(n, i+n*1000)
		}
		i := 0
		a := testing.AllocsPerRun(runs, func() {
			s.commit(batches[i])
			i++
		})
		for _, b := range batches {
			for _, c := range b {
				if out := <-c.done; out.err != nil {
					t.Fatal(out.err)
				}
			}
		}
		return a
	}
	one, many := allocs(1), allocs(65)
	perUpdate := (many - one) / 64
	// 4.3 measured (bbolt's leaves grow and split with the keys); a
	// transaction and a cursor of its own per Update made it 8.3.
	if perUpdate > 5 {
		t.Errorf("%.2f allocations per grouped Update (commit of 1: %.0f, of 65: %.0f), want at most 5", perUpdate, one, many)
	}
}
