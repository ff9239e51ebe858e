package storage_test

import (
	"context"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func TestJoinCommitsBothViews(t *testing.T) {
	ctx := context.Background()
	root := memstore.New(nil)
	a := storage.Sub(storage.Sub(root, "engines/"), "one/")
	b := storage.Sub(root, "lease/")
	j, err := storage.Join(a, b)
	if err != nil {
		t.Fatal(err)
	}
	err = j.Update(ctx, func(ctx context.Context, ta, tb storage.Tx) error {
		if err := ta.Put("account", []byte("x")); err != nil {
			return err
		}
		return tb.Put("id/1", []byte("y"))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"engines/one/account": "x", "lease/id/1": "y"}
	err = root.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		for k, v := range want {
			got, err := tx.Get(k)
			if err != nil || string(got) != v {
				t.Errorf("%s = %q, %v; want %q", k, got, err, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestJoinRefusesViewsOfDifferentStores(t *testing.T) {
	root, other := memstore.New(nil), memstore.New(nil)
	cases := map[string][2]storage.Store{
		"two stores":        {storage.Sub(root, "a/"), storage.Sub(other, "lease/")},
		"overlapping views": {root, storage.Sub(root, "lease/")},
		"nested views":      {storage.Sub(root, "lease/x/"), storage.Sub(root, "lease/")},
		"one view twice":    {storage.Sub(root, "a/"), storage.Sub(root, "a/")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := storage.Join(c[0], c[1]); keel.KindOf(err) != keel.KindInvalid {
				t.Fatalf("Join = %v, want an error of kind Invalid", err)
			}
		})
	}
}
