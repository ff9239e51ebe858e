package memstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/keelhq/keel/storage"
)

// BenchmarkTree: in a store of 100,000 keys (a tree four levels deep), one
// View that gets one key ("get"), one Update that overwrites one key
// ("put"), or one that moves one key to the end of the order as a lease's
// expiry index entry moves on renewal ("move": a Delete and a Put).
func BenchmarkTree(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	val := make([]byte, 200)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("lease/id/%08d", i)
	}
	open := func(b *testing.B) *Store {
		s := New(nil)
		for i := 0; i < n; i += 10_000 {
			err := s.Update(ctx, func(_ context.Context, tx storage.Tx) error {
				for _, k := range keys[i : i+10_000] {
					if err := tx.Put(k, val); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		return s
	}
	b.Run("op=get", func(b *testing.B) {
		s := open(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := keys[(i*7919)%n]
			err := s.View(ctx, func(_ context.Context, tx storage.Tx) error {
				_, err := tx.Get(k)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("op=put", func(b *testing.B) {
		s := open(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := keys[(i*7919)%n]
			if err := s.Update(ctx, func(_ context.Context, tx storage.Tx) error { return tx.Put(k, val) }); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("op=move", func(b *testing.B) {
		s := open(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			old, nu := keys[(i*7919)%n], fmt.Sprintf("lease/id/9%08d", i)
			err := s.Update(ctx, func(_ context.Context, tx storage.Tx) error {
				if err := tx.Delete(old); err != nil {
					return err
				}
				return tx.Put(nu, val)
			})
			if err != nil {
				b.Fatal(err)
			}
			keys[(i*7919)%n] = nu
			i++
		}
	})
}
