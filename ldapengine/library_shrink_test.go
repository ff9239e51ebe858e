package ldapengine

import (
	"context"
	"testing"

	"github.com/keelhq/keel/internal/everystore"
)

// TestLibrarySetShrinksAndSwapsOnEveryStore: on every store, etcd's limits
// included, a set of MaxLibraryAccounts accounts (120 on etcd; 120 on a
// store without a bound) shrinks to one account, and a set of 50 swaps
// them all for 50 others; the accounts that left are free for another set
// (the final transaction writes only the set; they are freed after it, in
// batches).
func TestLibrarySetShrinksAndSwapsOnEveryStore(t *testing.T) {
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		n := MaxLibraryAccounts(store.Limits())
		if n == 0 {
			n = 120
		}
		v := newLibEnv(t, open, n, libOptions{store: store})
		names := libSvcNames(n)
		if err := v.e.PutLibrarySet(ctx, "big", LibrarySetRequest{ServiceAccountNames: names}); err != nil {
			t.Fatalf("PutLibrarySet of %d accounts: %v", n, err)
		}
		if err := v.e.PutLibrarySet(ctx, "big", LibrarySetRequest{ServiceAccountNames: names[:1]}); err != nil {
			t.Fatalf("shrinking a set of %d accounts to one: %v", n, err)
		}
		if err := v.e.PutLibrarySet(ctx, "other", LibrarySetRequest{ServiceAccountNames: names[1:51]}); err != nil {
			t.Fatalf("the accounts that left: %v", err)
		}
		if err := v.e.PutLibrarySet(ctx, "other", LibrarySetRequest{ServiceAccountNames: names[51:101]}); err != nil {
			t.Fatalf("swapping 50 accounts for 50 others: %v", err)
		}
		if err := v.e.PutLibrarySet(ctx, "third", LibrarySetRequest{ServiceAccountNames: names[1:51]}); err != nil {
			t.Fatalf("the accounts swapped out: %v", err)
		}
		status, err := v.e.LibraryStatus(ctx, "other")
		if err != nil || len(status) != 50 {
			t.Fatalf("status of the swapped set: %d accounts, %v", len(status), err)
		}
		for _, set := range []string{"big", "other", "third"} {
			if _, err := v.e.CheckOut(libCaller("tok", "ent"), set, 0); err != nil {
				t.Errorf("check-out from %s: %v", set, err)
			}
		}
	})
}
