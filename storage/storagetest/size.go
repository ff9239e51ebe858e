package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/keelhq/keel/storage"
)

// testSize checks, for a store whose transactions tell sizes
// (storage.Sizer), that Size agrees with Get: in a View, and in an Update
// after its own writes and deletes. A store that cannot tell passes.
func testSize(t *testing.T, s storage.Store) {
	ctx := context.Background()
	n := 100 << 10
	if m := s.Limits().MaxValueSize; m > 0 {
		n = min(n, m)
	}
	large := bytes.Repeat([]byte("v"), n)
	if err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("size/small", []byte("abc")); err != nil {
			return err
		}
		return tx.Put("size/large", large)
	}); err != nil {
		t.Fatal(err)
	}
	check := func(tx storage.Tx, key string, want int) error {
		n, err := storage.SizeOf(tx, key)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			return nil
		case want < 0 && !errors.Is(err, storage.ErrNotFound):
			return fmt.Errorf("Size(%q) = %d, %v; want KindNotFound", key, n, err)
		case want >= 0 && (err != nil || n != want):
			return fmt.Errorf("Size(%q) = %d, %v; want %d", key, n, err, want)
		}
		return nil
	}
	if err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return errors.Join(check(tx, "size/small", 3), check(tx, "size/large", len(large)), check(tx, "size/none", -1))
	}); err != nil {
		t.Error(err)
	}
	if err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.Put("size/small", []byte("abcdef")); err != nil {
			return err
		}
		if err := tx.Delete("size/large"); err != nil {
			return err
		}
		return errors.Join(check(tx, "size/small", 6), check(tx, "size/large", -1))
	}); err != nil {
		t.Error(err)
	}
}
