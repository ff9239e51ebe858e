package storage_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// valueTx counts the entries a Scan visits with their values.
type valueTx struct {
	storage.Tx
	valued int
}

func (c *valueTx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	return c.Tx.Scan(prefix, opts, func(k string, v []byte) error {
		if !opts.KeysOnly {
			c.valued++
		}
		return fn(k, v)
	})
}

// Window reads the keys before the page without values, the page with
// them, and stops at the page's end.
func TestWindow(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(nil)
	t.Cleanup(func() { _ = s.Close() })
	err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		for i := range 10 {
			if err := tx.Put(fmt.Sprintf("ix/%02d", i), []byte(fmt.Sprint("v", i))); err != nil {
				return err
			}
		}
		return tx.Put("iy/00", []byte("outside"))
	})
	if err != nil {
		t.Fatal(err)
	}
	window := func(offset, limit, stopAt int) ([]string, int) {
		var got []string
		var visited, valued int
		err := s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			vt := &valueTx{Tx: tx}
			ct := &countingTx{Tx: vt}
			err := storage.Window(ct, "ix/", offset, limit, func(k string, v []byte) error {
				got = append(got, k[len("ix/"):]+"="+string(v))
				if len(got) == stopAt {
					return storage.StopScan
				}
				return nil
			})
			visited, valued = ct.visited, vt.valued
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if valued != len(got) {
			t.Errorf("Window(%d, %d) read %d values for %d entries", offset, limit, valued, len(got))
		}
		return got, visited
	}
	for _, c := range []struct {
		offset, limit, stopAt int
		want                  []string
		visited               int
	}{
		{0, 3, 0, []string{"00=v0", "01=v1", "02=v2"}, 3},
		{4, 3, 0, []string{"04=v4", "05=v5", "06=v6"}, 7}, // 4 keys skipped + 3 read
		{8, 5, 0, []string{"08=v8", "09=v9"}, 10},         // the last page is short
		{10, 5, 0, nil, 10},                               // past the end
		{-2, 1, 0, []string{"00=v0"}, 1},                  // negative offset
		{3, 0, 0, nil, 0},                                 // nothing asked, nothing read
		{2, 5, 2, []string{"02=v2", "03=v3"}, 4},          // fn stops early
	} {
		got, visited := window(c.offset, c.limit, c.stopAt)
		if !slices.Equal(got, c.want) || visited != c.visited {
			t.Errorf("Window(%d, %d) = %v visiting %d keys, want %v visiting %d", c.offset, c.limit, got, visited, c.want, c.visited)
		}
	}
}
