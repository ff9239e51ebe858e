package project

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// TestOnForget: deleting a workspace or a project calls the registered
// service's ForgetFunc in the same transaction, with its own view; a
// ForgetFunc that fails refuses the deletion and leaves the store as it
// was.
func TestOnForget(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		store := open(t)
		c, err := New(storage.Sub(store, "project/"), nil)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := c.Register(storage.Sub(store, "svc/"), func(context.Context, string, storage.Store) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		var heard []Forgotten
		fail := false
		reg.OnForget(func(_ context.Context, tx storage.Tx, f Forgotten) error {
			if fail {
				return errors.New("refused")
			}
			heard = append(heard, f)
			return tx.Put("forgot/"+f.ID, nil)
		})
		ctx := context.Background()
		if _, err := c.CreateOrganization(ctx, OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
			t.Fatal(err)
		}
		p, err := c.Create(ctx, "acme", ProjectRequest{Name: ptr("apps")})
		if err != nil {
			t.Fatal(err)
		}
		w, err := c.CreateWorkspace(ctx, "acme", WorkspaceRequest{Name: new("web"), ProjectID: new(p.ID)})
		if err != nil {
			t.Fatal(err)
		}
		fail = true
		before := storagetest.Dump(t, store)
		if err := c.DeleteWorkspace(ctx, w.ID); err == nil {
			t.Fatal("a refused forget did not refuse the deletion")
		}
		if !maps.Equal(before, storagetest.Dump(t, store)) {
			t.Fatal("a refused deletion changed the store")
		}
		fail = false
		if err := c.DeleteWorkspace(ctx, w.ID); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
		want := []Forgotten{{ForgetWorkspace, "acme", w.ID}, {ForgetProject, "acme", p.ID}}
		if !slices.Equal(heard, want) {
			t.Fatalf("heard %+v, want %+v", heard, want)
		}
		dump := storagetest.Dump(t, store)
		for _, id := range []string{w.ID, p.ID} {
			if _, ok := dump["svc/forgot/"+id]; !ok {
				t.Fatalf("the service's write for %s is not in the store: %v", id, slices.Sorted(maps.Keys(dump)))
			}
		}
	})
}

// TestNewRefusesItsStore: New refuses a nil store, and a part of a store
// a composition root gave to another kind of component, naming Store.
func TestNewRefusesItsStore(t *testing.T) {
	if _, err := New(nil, nil); keel.KindOf(err) != keel.KindInvalid || len(keel.FieldErrors(err)) != 1 || keel.FieldErrors(err)[0].Field != "Store" {
		t.Errorf("New(nil): %v, want Invalid naming Store", err)
	}
	root := memstore.New(nil)
	defer root.Close()
	if err := storage.Claim(storage.Sub(root, "policy/"), "policy"); err != nil {
		t.Fatal(err)
	}
	if _, err := New(storage.Sub(root, "policy/x/"), nil); keel.KindOf(err) != keel.KindInvalid || keel.FieldErrors(err)[0].Field != "Store" {
		t.Errorf("New inside the policies' part: %v, want Invalid naming Store", err)
	}
	if _, err := New(storage.Sub(root, "project/"), nil); err != nil {
		t.Errorf("New over a part of its own: %v", err)
	}
}
