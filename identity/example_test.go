package identity_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/identity"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()

	// The groups keep their keys in the store given to New, at its root
	// (mount.Table.Groups gives them the view "identity/" of its store):
	// group/id/<id> holds a group's record, group/name/<folded name> the
	// name index, and edge/member/<parent>/<child> and
	// edge/parent/<child>/<parent> each member group.
	groups, err := identity.New(store, &identity.Options{Authorizer: keel.AllowAll{}})
	if err != nil {
		panic(err)
	}

	eng, err := groups.CreateOrUpdateByName(ctx, "Engineering", identity.GroupRequest{Policies: &[]string{"dev", "DEV", "ci"}})
	if err != nil {
		panic(err)
	}
	ops, err := groups.CreateOrUpdate(ctx, "", identity.GroupRequest{Name: new("ops"), MemberGroupIDs: &[]string{eng.ID}})
	if err != nil {
		panic(err)
	}

	// The keys written, with the ids named.
	ids := strings.NewReplacer(eng.ID, "<eng>", ops.ID, "<ops>")
	var keys []string
	err = store.View(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.Scan("", storage.ScanOptions{KeysOnly: true}, func(key string, _ []byte) error {
			keys = append(keys, ids.Replace(key))
			return nil
		})
	})
	if err != nil {
		panic(err)
	}
	slices.Sort(keys)
	fmt.Println(strings.Join(keys, "\n"))

	g, err := groups.GetByName(ctx, "engineering")
	if err != nil {
		panic(err)
	}
	fmt.Println(g.Name, g.Policies, g.ParentGroupIDs[0] == ops.ID)

	// A cycle is refused, on the field that causes it.
	_, err = groups.Update(ctx, eng.ID, identity.GroupRequest{MemberGroupIDs: &[]string{ops.ID}})
	fmt.Println(errors.Is(err, keel.KindInvalid), keel.FieldErrors(err)[0].Field)

	// Deleting ops removes it from its members' parents.
	if err := groups.Delete(ctx, ops.ID); err != nil {
		panic(err)
	}
	g, _ = groups.Get(ctx, eng.ID)
	fmt.Println(len(g.ParentGroupIDs))

	// The lists are paged: the first page, of defaultListLimit names at
	// most, is the last when its Next is empty (keel.All walks them all).
	page, _ := groups.ListNames(ctx, keel.ListRequest{})
	fmt.Println(page.Items, page.Next == "")
	// Output:
	// edge/member/<ops>/<eng>
	// edge/parent/<eng>/<ops>
	// group/id/<eng>
	// group/id/<ops>
	// group/name/engineering
	// group/name/ops
	// Engineering [ci dev] true
	// true MemberGroupIDs
	// 0
	// [Engineering] true
}
