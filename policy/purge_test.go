package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// TestDeletionFindsSetsStoredWithoutIndex: sets stored before sets were
// indexed by organization and name (no orgset or setname key, no marker)
// are found and deleted with their organization; the sets of other
// organizations stay, indexed.
func TestDeletionFindsSetsStoredWithoutIndex(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		ctx := root()
		a := e.mk(t, "a")
		set, err := e.s.CreateSet(ctx, "acme", CreateSetRequest{Name: ptr("old"), PolicyIDs: []string{a.ID}})
		if err != nil {
			t.Fatal(err)
		}
		empty, err := e.s.CreateSet(ctx, "acme", CreateSetRequest{Name: ptr("old-empty"), PolicyIDs: nil})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.cat.CreateOrganization(ctx, project.OrganizationRequest{Name: new("beta"), Email: new("")}); err != nil {
			t.Fatal(err)
		}
		b, err := e.s.Create(ctx, "beta", CreateRequest{Name: ptr("b"), EnforcementLevel: ptr(Advisory)})
		if err != nil {
			t.Fatal(err)
		}
		other, err := e.s.CreateSet(ctx, "beta", CreateSetRequest{Name: ptr("kept"), PolicyIDs: []string{b.ID}})
		if err != nil {
			t.Fatal(err)
		}
		// As a store written before the orgset keys existed.
		err = e.s.store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
			for _, k := range []string{orgSets("acme") + set.ID, orgSets("acme") + empty.ID, orgSets("beta") + other.ID,
				setNames("acme") + "old", setNames("acme") + "old-empty", setNames("beta") + "kept", setsIndexed} {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.cat.DeleteOrganization(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		dump := storagetest.Dump(t, e.raw)
		for k := range dump {
			for _, id := range []string{"acme", a.ID, set.ID, empty.ID} {
				if strings.Contains(k, id) {
					t.Errorf("key left: %s", k)
				}
			}
		}
		for _, k := range []string{"policy/" + orgSets("beta") + other.ID, "policy/" + setNames("beta") + "kept", "policy/" + setsIndexed} {
			if _, ok := dump[k]; !ok {
				t.Errorf("no key %s", k)
			}
		}
		if got, err := e.s.GetSet(ctx, other.ID); err != nil || len(got.PolicyIDs) != 1 {
			t.Fatalf("the set of beta = %+v, %v", got, err)
		}
	})
}

// TestDeletionIsRetrySafe: every transaction of a deletion, run twice as
// a store that retries does, deletes what one run does.
func TestDeletionIsRetrySafe(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		var fs *faultstore.Store
		e := newEnv(t, open, nil, func(s storage.Store) storage.Store { fs = faultstore.New(s); return fs })
		a, b := e.mk(t, "a"), e.mk(t, "b")
		if _, err := e.s.CreateSet(root(), "acme", CreateSetRequest{Name: ptr("s"), PolicyIDs: []string{a.ID, b.ID}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.cat.Create(root(), "acme", project.ProjectRequest{Name: ptr("infra")}); err != nil {
			t.Fatal(err)
		}
		fs.Rerun(true)
		if err := e.cat.DeleteOrganization(root(), "acme"); err != nil {
			t.Fatal(err)
		}
		dump := storagetest.Dump(t, e.raw)
		delete(dump, "policy/"+setsIndexed)
		if len(dump) != 0 {
			t.Fatalf("keys left: %v", dump)
		}
	})
}
