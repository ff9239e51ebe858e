package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// countingTx counts the keys a Scan visits.
type countingTx struct {
	storage.Tx
	visited int
}

func (c *countingTx) Scan(prefix string, opts storage.ScanOptions, fn func(string, []byte) error) error {
	return c.Tx.Scan(prefix, opts, func(k string, v []byte) error {
		c.visited++
		return fn(k, v)
	})
}

func children(t *testing.T, s storage.Store, prefix, after string, limit int) ([]string, int) {
	t.Helper()
	var got []string
	visited := 0
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		ct := &countingTx{Tx: tx}
		err := storage.Children(ct, prefix, after, func(name string) error {
			got = append(got, name)
			if len(got) == limit {
				return storage.StopScan
			}
			return nil
		})
		visited = ct.visited
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, visited
}

func TestChildren(t *testing.T) {
	s := memstore.New(nil)
	keys := []string{"x/a", "x/b/1", "x/b/2", "x/b/3/deep", "x/b0", "x/c", "x/c/d", "x/d/", "y/z"}
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for _, k := range keys {
			if err := tx.Put(k, []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, prefix, after string
		limit               int
		want                []string
	}{
		{"all", "x/", "", 0, []string{"a", "b/", "b0", "c", "c/", "d/"}},
		{"after a leaf", "x/", "a", 0, []string{"b/", "b0", "c", "c/", "d/"}},
		{"after a folder", "x/", "b/", 0, []string{"b0", "c", "c/", "d/"}},
		{"after a name that is both", "x/", "c", 0, []string{"c/", "d/"}},
		{"stopped early", "x/", "", 2, []string{"a", "b/"}},
		{"a folder", "x/b/", "", 0, []string{"1", "2", "3/"}},
		{"nothing", "nope/", "", 0, nil},
		{"root", "", "", 0, []string{"x/", "y/"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := children(t, s, c.prefix, c.after, c.limit)
			if !slices.Equal(got, c.want) {
				t.Fatalf("Children(%q, after %q) = %q, want %q", c.prefix, c.after, got, c.want)
			}
		})
	}
}

// Listing 3 folders that hold 3,000 keys visits one key per folder.
func TestChildrenSkipsFolders(t *testing.T) {
	s := memstore.New(nil)
	err := s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		for f := range 3 {
			for i := range 1000 {
				if err := tx.Put(fmt.Sprintf("kv/f%d/%04d", f, i), nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, visited := children(t, s, "kv/", "", 0)
	if !slices.Equal(got, []string{"f0/", "f1/", "f2/"}) {
		t.Fatalf("children = %q", got)
	}
	if visited != 3 {
		t.Fatalf("visited %d keys to list 3 folders, want 3", visited)
	}
}

func TestChildrenReturnsFnError(t *testing.T) {
	s := memstore.New(nil)
	s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error { return tx.Put("p/a/b", nil) })
	boom := errors.New("boom")
	err := s.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return storage.Children(tx, "p/", "", func(string) error { return boom })
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want fn's error", err)
	}
}
