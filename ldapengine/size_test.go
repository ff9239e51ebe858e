package ldapengine

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestMain(m *testing.M) { everystore.Main(m) }

// TestLibrarySetOf64OnEveryStore: a library set of 64 accounts is created,
// read, checked out from (its last account), checked in and deleted on
// every store, etcd's limits included; on a store that bounds
// transactions a set of more than Limits().MaxLibraryAccounts is refused
// up front, naming the field and the limit, with the store as it was.
func TestLibrarySetOf64OnEveryStore(t *testing.T) {
	const n = 64
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		lim := maxLibraryAccounts(store.Limits())
		v := newLibEnv(t, open, max(n, lim+1), libOptions{store: store})
		if got := v.e.Limits().MaxLibraryAccounts; got != lim {
			t.Fatalf("Limits().MaxLibraryAccounts = %d, want %d", got, lim)
		}
		names := libSvcNames(n)
		if err := v.e.PutLibrarySet(ctx, "big", LibrarySetRequest{ServiceAccountNames: names}); err != nil {
			t.Fatalf("PutLibrarySet of %d accounts: %v", n, err)
		}
		set, err := v.e.GetLibrarySet(ctx, "big")
		if err != nil || len(set.ServiceAccountNames) != n {
			t.Fatalf("read back %d accounts, %v", len(set.ServiceAccountNames), err)
		}
		// Check out every account but one, so the last check-out reads
		// them all.
		caller := libCaller("tok", "ent")
		for i := range n {
			if _, err := v.e.CheckOut(caller, "big", CheckOutRequest{}); err != nil {
				t.Fatalf("check-out %d of %d: %v", i+1, n, err)
			}
		}
		if in, err := v.e.CheckIn(caller, "big", CheckInRequest{ServiceAccountNames: names}); err != nil || len(in) != n {
			t.Fatalf("check-in: %d accounts, %v", len(in), err)
		}
		if lim > 0 {
			before := storagetest.Dump(t, store)
			err := v.e.PutLibrarySet(ctx, "huge", LibrarySetRequest{ServiceAccountNames: libSvcNames(lim + 1)})
			wantField(t, err, "ServiceAccountNames", fmt.Sprintf("at most %d", lim))
			if !maps.Equal(before, storagetest.Dump(t, store)) {
				t.Fatal("the refused PutLibrarySet changed the store")
			}
		}
		if err := v.e.DeleteLibrarySet(ctx, "big"); err != nil {
			t.Fatalf("DeleteLibrarySet of %d accounts: %v", n, err)
		}
		// The accounts are free: another set takes them all.
		if err := v.e.PutLibrarySet(ctx, "again", LibrarySetRequest{ServiceAccountNames: names}); err != nil {
			t.Fatalf("the accounts of the deleted set: %v", err)
		}
	})
}
