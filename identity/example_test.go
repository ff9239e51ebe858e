package identity_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()

	// The groups keep their keys under "identity/" of the store.
	groups, err := identity.New(store, &identity.Options{Authorizer: keel.AllowAll{}})
	if err != nil {
		panic(err)
	}

	eng, err := groups.UpsertByName(ctx, "Engineering", identity.Input{Policies: &[]string{"dev", "DEV", "ci"}})
	if err != nil {
		panic(err)
	}
	ops, err := groups.Upsert(ctx, "", identity.Input{Name: new("ops"), MemberGroupIDs: &[]string{eng.ID}})
	if err != nil {
		panic(err)
	}

	g, err := groups.ReadByName(ctx, "engineering")
	if err != nil {
		panic(err)
	}
	fmt.Println(g.Name, g.Policies, g.ParentGroupIDs[0] == ops.ID)

	// A cycle is refused, on the field that causes it.
	_, err = groups.UpdateByID(ctx, eng.ID, identity.Input{MemberGroupIDs: &[]string{ops.ID}})
	fmt.Println(errors.Is(err, keel.ErrInvalid), keel.FieldErrors(err)[0].Field)

	// Deleting ops removes it from its members' parents.
	if err := groups.DeleteByID(ctx, ops.ID); err != nil {
		panic(err)
	}
	g, _ = groups.ReadByID(ctx, eng.ID)
	fmt.Println(len(g.ParentGroupIDs))

	names, _ := groups.ListNames(ctx)
	fmt.Println(names)
	// Output:
	// Engineering [ci dev] true
	// true MemberGroupIDs
	// 0
	// [Engineering]
}
