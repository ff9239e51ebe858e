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
	if got := maxMemberGroups(etcdstore.DefaultLimits()); got != 30 {
		t.Fatalf("MaxMemberGroups on etcd's default limits = %d; the package doc says 30", got)
	}
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		g, err := New(storage.Sub(store, keyPrefix), &Options{Clock: keel.NewFakeClock(t0)})
		if err != nil {
			t.Fatal(err)
		}

		entities := make([]string, 500)
		for i := range entities {
			entities[i] = uuid.NewString()
		}
		big, err := g.CreateOrUpdateByName(ctx, "big", GroupRequest{MemberEntityIDs: &entities})
		if err != nil {
			t.Fatalf("a group of 500 member entities: %v", err)
		}
		if gr, err := g.Get(ctx, big.ID); err != nil || len(gr.MemberEntityIDs) != 500 {
			t.Fatalf("read back %d entities, %v", len(gr.MemberEntityIDs), err)
		}

		lim := g.Limits().MaxMemberGroups
		if lim == 0 {
			lim = 40 // no limit: show that 40 work
		}
		var first, second []string
		for i := range 2*lim + 1 {
			res, err := g.CreateOrUpdateByName(ctx, fmt.Sprint("m", i), GroupRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if i < lim {
				first = append(first, res.ID)
			} else {
				second = append(second, res.ID)
			}
		}
		if _, err := g.Update(ctx, big.ID, GroupRequest{MemberGroupIDs: &first}); err != nil {
			t.Fatalf("%d member groups: %v", len(first), err)
		}
		// The whole list replaced by another as long: every edge changes.
		next := second[:lim]
		if _, err := g.Update(ctx, big.ID, GroupRequest{MemberGroupIDs: &next}); err != nil {
			t.Fatalf("%d member groups replaced by %d others: %v", lim, lim, err)
		}
		if g.Limits().MaxMemberGroups > 0 {
			before := storagetest.Dump(t, store)
			_, err := g.Update(ctx, big.ID, GroupRequest{MemberGroupIDs: &second})
			wantInvalid(t, err, "MemberGroupIDs", fmt.Sprintf("at most %d", lim))
			if !strings.Contains(err.Error(), fmt.Sprint(len(second))) {
				t.Fatalf("the error %v does not say how many were listed", err)
			}
			if after := storagetest.Dump(t, store); !maps.Equal(before, after) {
				t.Fatal("the refused write changed the store")
			}
		}
		if err := g.Delete(ctx, big.ID); err != nil {
			t.Fatalf("delete the group of 500 entities and %d groups: %v", lim, err)
		}
		checkGraph(t, store)
	})
}

// TestDeleteGroupWithMoreEdgesThanOneTransaction: deleting a group writes
// two keys per member group and three per parent group (two edges and the
// parent's record) in one transaction. On etcd a group of 500 member
// entities, MaxMemberGroups (30) member groups and 23 parent groups takes
// 131 writes: the delete is refused up front, naming the limit and what
// to remove, and leaves the store as it was; once the group has left one
// parent (22 left, 128 writes) it is deleted whole. The stores without
// limits delete it at once.
func TestDeleteGroupWithMoreEdgesThanOneTransaction(t *testing.T) {
	// The numbers of the package documentation.
	for _, c := range []struct {
		members, parents int
		fits             bool
	}{{30, 22, true}, {30, 23, false}, {0, 42, true}, {0, 43, false}, {1, 42, false}} {
		err := deleteFits(etcdstore.DefaultLimits(), c.members, c.parents)
		if (err == nil) != c.fits || (err != nil && keel.KindOf(err) != keel.KindTooLarge) {
			t.Errorf("on etcd's default limits, deleting a group of %d member groups and %d parent groups: %v, want fits=%v",
				c.members, c.parents, err, c.fits)
		}
	}
	if err := deleteFits(storage.DefaultLimits(), 10000, 10000); err != nil {
		t.Errorf("memstore's limits bound a delete: %v", err)
	}
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		e := newEnv(t, open, nil, nil)
		entities := make([]string, 500)
		for i := range entities {
			entities[i] = uuid.NewString()
		}
		lim := e.g.Limits().MaxMemberGroups
		if lim == 0 {
			lim = 30 // the same group on every store
		}
		var members []string
		for i := range lim {
			members = append(members, e.create(t, fmt.Sprint("member", i)))
		}
		big, err := e.g.CreateOrUpdateByName(ctx, "big", GroupRequest{MemberEntityIDs: &entities, MemberGroupIDs: &members})
		if err != nil {
			t.Fatal(err)
		}
		var parents []string
		for i := range 23 {
			parents = append(parents, e.create(t, fmt.Sprint("parent", i), big.ID))
		}
		if gr := e.read(t, big.ID); len(gr.ParentGroupIDs) != 23 || len(gr.MemberGroupIDs) != lim || len(gr.MemberEntityIDs) != 500 {
			t.Fatalf("big has %d parents, %d member groups, %d entities", len(gr.ParentGroupIDs), len(gr.MemberGroupIDs), len(gr.MemberEntityIDs))
		}
		if ops := e.raw.Limits().MaxTxOps; ops > 0 {
			before := storagetest.Dump(t, e.raw)
			err := e.g.Delete(ctx, big.ID)
			wantKind(t, err, keel.KindTooLarge)
			for _, s := range []string{"131 writes", fmt.Sprintf("%d member groups", lim), "23 parent groups", fmt.Sprintf("at most %d", ops), "MaxTxOps", "remove"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the refusal %q does not say %q", err, s)
				}
			}
			if after := storagetest.Dump(t, e.raw); !maps.Equal(before, after) {
				t.Fatal("the refused delete changed the store")
			}
			// By name alike.
			wantKind(t, e.g.DeleteByName(ctx, "BIG"), keel.KindTooLarge)
			// Leave one parent: 128 writes fit.
			if _, err := e.g.Update(ctx, parents[0], GroupRequest{MemberGroupIDs: &[]string{}}); err != nil {
				t.Fatal(err)
			}
			parents = parents[1:]
		}
		index := e.read(t, parents[0]).ModifyIndex
		if err := e.g.Delete(ctx, big.ID); err != nil {
			t.Fatalf("delete a group of %d member groups and %d parent groups: %v", lim, len(parents), err)
		}
		if _, err := e.g.GetByName(ctx, "big"); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("read of the deleted group: %v", err)
		}
		for _, p := range parents {
			if gr := e.read(t, p); len(gr.MemberGroupIDs) != 0 || gr.ModifyIndex != index+1 {
				t.Fatalf("parent %s after the delete: %d members, index %d (want 0, %d)", p, len(gr.MemberGroupIDs), gr.ModifyIndex, index+1)
			}
		}
		for _, m := range members {
			if gr := e.read(t, m); len(gr.ParentGroupIDs) != 0 {
				t.Fatalf("member %s keeps parents %q", m, gr.ParentGroupIDs)
			}
		}
		checkGraph(t, e.raw)
	})
}

// TestAddMemberToGroupWithManyAncestors: adding a member group walks the
// ancestors of the group to detect cycles, reading each one's parent
// groups in the write's transaction. On etcd a group in 62 parent groups
// needs 125 reads for it, more than the write has left (123 of 128): the
// write is refused up front, naming the limit, and leaves the store as it
// was; in 61 parent groups it is accepted. So for a group 62 and 61 deep
// in a chain. The stores without limits accept them at once.
func TestAddMemberToGroupWithManyAncestors(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		e := newEnv(t, open, nil, nil)
		child, member := e.create(t, "child"), e.create(t, "member")
		var parents []string
		for i := range 62 {
			parents = append(parents, e.create(t, fmt.Sprint("parent", i), child))
		}
		add := GroupRequest{MemberGroupIDs: &[]string{member}}
		if reads := e.raw.Limits().MaxTxReads; reads > 0 {
			before := storagetest.Dump(t, e.raw)
			_, err := e.g.Update(ctx, child, add)
			wantKind(t, err, keel.KindTooLarge)
			for _, s := range []string{"cycles", "ancestor", fmt.Sprintf("MaxTxReads %d", reads), "remove"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the refusal %q does not say %q", err, s)
				}
			}
			if after := storagetest.Dump(t, e.raw); !maps.Equal(before, after) {
				t.Fatal("the refused write changed the store")
			}
			if _, err := e.g.Update(ctx, parents[0], GroupRequest{MemberGroupIDs: &[]string{}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.g.Update(ctx, child, add); err != nil {
			t.Fatalf("add a member group to a group of %d parent groups: %v", len(e.read(t, child).ParentGroupIDs), err)
		}
		if gr := e.read(t, child); len(gr.MemberGroupIDs) != 1 {
			t.Fatalf("member groups %q", gr.MemberGroupIDs)
		}
		// A chain: the bottom of 61 ancestors gains members, of 62 not.
		chain := []string{e.create(t, "c0")}
		for i := 1; i <= 62; i++ {
			chain = append(chain, e.create(t, fmt.Sprint("c", i), chain[i-1]))
		}
		_, err := e.g.Update(ctx, chain[0], add)
		if e.raw.Limits().MaxTxReads > 0 {
			wantKind(t, err, keel.KindTooLarge)
			// The top leaves the chain: 61 ancestors.
			if _, err := e.g.Update(ctx, chain[62], GroupRequest{MemberGroupIDs: &[]string{}}); err != nil {
				t.Fatal(err)
			}
			_, err = e.g.Update(ctx, chain[0], add)
		}
		if err != nil {
			t.Fatalf("add a member group at the bottom of a chain: %v", err)
		}
		checkGraph(t, e.raw)
	})
}
