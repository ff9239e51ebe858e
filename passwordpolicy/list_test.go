package passwordpolicy_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
)

// putN puts the records of the policies p00000 … p(n-1), 100 a
// transaction (the stores limit a transaction's size), and returns their
// names in order.
func putN(t *testing.T, store storage.Store, n int) []string {
	t.Helper()
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("p%05d", i))
	}
	for chunk := range slices.Chunk(names, 100) {
		err := store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			for _, name := range chunk {
				if err := tx.Put(name, []byte(`{"policy":"x"}`)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestListPaged: List walks more policies than defaultListLimit in pages
// of at most the limit, sorted, each name once; Next is empty on the last
// page; a page past the end is empty.
func TestListPaged(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		store := open(t)
		want := putN(t, store, defaultListLimit+5)
		p, err := passwordpolicy.New(store, nil)
		if err != nil {
			t.Fatal(err)
		}
		first, err := p.List(ctx, keel.ListRequest{})
		if err != nil || len(first.Items) != defaultListLimit || first.Next != first.Items[len(first.Items)-1] {
			t.Fatalf("first page of the default limit: %d items, Next %q, %v", len(first.Items), first.Next, err)
		}
		rest, err := p.List(ctx, keel.ListRequest{Cursor: first.Next})
		if err != nil || !slices.Equal(rest.Items, want[defaultListLimit:]) || rest.Next != "" {
			t.Fatalf("second page: %v, Next %q, %v", rest.Items, rest.Next, err)
		}
		for _, limit := range []int{1, 7, 1000, 2000} {
			var got []string
			pages := 0
			for name, err := range keel.All(ctx, limit, p.List) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, name)
			}
			r := keel.ListRequest{Limit: limit}
			for {
				page, err := p.List(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Items) > limit {
					t.Fatalf("limit %d: page of %d", limit, len(page.Items))
				}
				pages++
				if page.Next == "" {
					break
				}
				r.Cursor = page.Next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("limit %d: walked %d names, want %d in order", limit, len(got), len(want))
			}
			if wantPages := (len(want) + limit - 1) / limit; pages != wantPages {
				t.Fatalf("limit %d: %d pages, want %d", limit, pages, wantPages)
			}
		}
		past, err := p.List(ctx, keel.ListRequest{Cursor: want[len(want)-1]})
		if err != nil || len(past.Items) != 0 || past.Next != "" {
			t.Fatalf("page past the end: %v, %v", past, err)
		}
	})
}

// TestListDeleteBetweenPages: deleting the last name of a page, and names
// of the next, between two pages: the walk goes on after the cursor, with
// no name twice and none of the deleted ones.
func TestListDeleteBetweenPages(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		store := open(t)
		all := putN(t, store, 10)
		p, err := passwordpolicy.New(store, nil)
		if err != nil {
			t.Fatal(err)
		}
		page, err := p.List(ctx, keel.ListRequest{Limit: 4})
		if err != nil || !slices.Equal(page.Items, all[:4]) || page.Next != all[3] {
			t.Fatalf("first page: %v, %v", page, err)
		}
		for _, name := range []string{all[3], all[4], all[6]} {
			if err := p.Delete(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		page, err = p.List(ctx, keel.ListRequest{Cursor: page.Next, Limit: 4})
		if want := []string{all[5], all[7], all[8], all[9]}; err != nil || !slices.Equal(page.Items, want) || page.Next != "" {
			t.Fatalf("page after deletes: %v, %v; want %v and no Next", page, err, want)
		}
	})
}

// defaultListLimit is List's documented page size when Limit is 0.
const defaultListLimit = 1000
