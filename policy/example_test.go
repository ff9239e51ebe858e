package policy_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()

	// Each service keeps its keys in a view of the store its caller
	// chooses; the two views do not overlap.
	orgs, err := project.New(storage.Sub(store, "project/"), nil)
	if err != nil {
		panic(err)
	}
	policies, err := policy.New(storage.Sub(store, "policy/"), &policy.Options{Organizations: orgs})
	if err != nil {
		panic(err)
	}
	if _, err := orgs.CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
		panic(err)
	}

	name := "no-public-buckets"
	p, err := policies.Create(ctx, "acme", policy.CreateRequest{
		Name:    &name,
		Enforce: &[]policy.Enforce{{Path: "no-public-buckets.policy", Mode: policy.SoftMandatory}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.EnforcementLevel, p.UpdatedAt == nil)

	// Code is uploaded in a second step.
	if err := policies.Upload(ctx, p.ID, []byte("main = rule { true }")); err != nil {
		panic(err)
	}
	code, _ := policies.Download(ctx, p.ID)
	fmt.Println(string(code))

	// An unknown organization is not found.
	_, err = policies.List(ctx, "nope", policy.ListRequest{})
	fmt.Println(errors.Is(err, keel.KindNotFound))

	// Deleting the organization deletes its policies: an organization
	// of the same name, created again, has none.
	if err := orgs.DeleteOrganization(ctx, "acme"); err != nil {
		panic(err)
	}
	if _, err := orgs.CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("")}); err != nil {
		panic(err)
	}
	page, _ := policies.List(ctx, "acme", policy.ListRequest{})
	_, err = policies.Get(ctx, p.ID)
	fmt.Println(len(page.Items), errors.Is(err, keel.KindNotFound))
	// Output:
	// soft-mandatory true
	// main = rule { true }
	// true
	// 0 true
}
