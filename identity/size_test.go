package identity

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestMain(m *testing.M) { everystore.Main(m) }

// TestLargeGroupsOnEveryStore: a group of 500 member entities is written,
// read and deleted on every store; on a store that bounds transactions a
// write may list MaxMemberGroups member groups, and replace them all at
// once with as many others; one more is refused up front, naming the
// field and the limit, with the store as it was.
func TestLargeGroupsOnEveryStore(t *testing.T) {
	if got := maxMemberGroups(etcdstore.DefaultLimits); got != 30 {
		t.Fatalf("MaxMemberGroups on etcd's default limits = %d; the package doc says 30", got)
	}
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		g := New(storage.Sub(store, keyPrefix), &Options{Clock: keel.NewFakeClock(t0)})

		entities := make([]string, 500)
		for i := range entities {
			entities[i] = uuid.NewString()
		}
		big, err := g.UpsertByName(ctx, "big", Input{MemberEntityIDs: &entities})
		if err != nil {
			t.Fatalf("a group of 500 member entities: %v", err)
		}
		if gr, err := g.ReadByID(ctx, big.ID); err != nil || len(gr.MemberEntityIDs) != 500 {
			t.Fatalf("read back %d entities, %v", len(gr.MemberEntityIDs), err)
		}

		lim := g.MaxMemberGroups()
		if lim == 0 {
			lim = 40 // no limit: show that 40 work
		}
		var first, second []string
		for i := range 2*lim + 1 {
			res, err := g.UpsertByName(ctx, fmt.Sprint("m", i), Input{})
			if err != nil {
				t.Fatal(err)
			}
			if i < lim {
				first = append(first, res.ID)
			} else {
				second = append(second, res.ID)
			}
		}
		if _, err := g.UpdateByID(ctx, big.ID, Input{MemberGroupIDs: &first}); err != nil {
			t.Fatalf("%d member groups: %v", len(first), err)
		}
		// The whole list replaced by another as long: every edge changes.
		next := second[:lim]
		if _, err := g.UpdateByID(ctx, big.ID, Input{MemberGroupIDs: &next}); err != nil {
			t.Fatalf("%d member groups replaced by %d others: %v", lim, lim, err)
		}
		if g.MaxMemberGroups() > 0 {
			before := storagetest.Dump(t, store)
			_, err := g.UpdateByID(ctx, big.ID, Input{MemberGroupIDs: &second})
			wantInvalid(t, err, "MemberGroupIDs", fmt.Sprintf("at most %d", lim))
			if !strings.Contains(err.Error(), fmt.Sprint(len(second))) {
				t.Fatalf("the error %v does not say how many were listed", err)
			}
			if after := storagetest.Dump(t, store); !maps.Equal(before, after) {
				t.Fatal("the refused write changed the store")
			}
		}
		if err := g.DeleteByID(ctx, big.ID); err != nil {
			t.Fatalf("delete the group of 500 entities and %d groups: %v", lim, err)
		}
		checkGraph(t, store)
	})
}
