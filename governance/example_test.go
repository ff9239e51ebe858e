package governance_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/governance"
	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()

	// The program gives its whole store: the family chooses its keys.
	// AllowAll is asked for by name: this program does its own access
	// control.
	gov, err := governance.Open(ctx, store, &governance.Options{Authorizer: keel.AllowAll{}})
	if err != nil {
		panic(err)
	}
	defer gov.Close()

	org, err := gov.Catalog().CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("ops@acme.test")})
	if err != nil {
		panic(err)
	}
	prj, err := gov.Catalog().Get(ctx, org.DefaultProjectID)
	if err != nil {
		panic(err)
	}
	fmt.Println(prj.Name)

	name, level := "require-tags", policy.Advisory
	p, err := gov.Policies().Create(ctx, "acme", policy.CreateRequest{Name: &name, EnforcementLevel: &level})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Name, p.EnforcementLevel)

	// Deleting the organization deletes its policies.
	if err := gov.Catalog().DeleteOrganization(ctx, "acme"); err != nil {
		panic(err)
	}
	_, err = gov.Policies().Get(ctx, p.ID)
	fmt.Println(errors.Is(err, keel.KindNotFound))

	// Without an Authorizer, Open refuses.
	_, err = governance.Open(ctx, store, nil)
	fmt.Println(keel.KindOf(err) == keel.KindInvalid, keel.FieldErrors(err)[0].Field)
	// Output:
	// Default Project
	// require-tags advisory
	// true
	// true Authorizer
}
