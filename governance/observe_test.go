package governance_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/governance"
	"github.com/keelhq/keel/internal/oprecord"
	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage/memstore"
)

// TestObserverReachesCatalogAndPolicies: the Observer given to Open is told
// of the catalog's operations and of the policies', each with its outcome,
// and one that refuses an operation keeps it from acting.
func TestObserverReachesCatalogAndPolicies(t *testing.T) {
	ctx := context.Background()
	rec := &oprecord.Recorder{}
	gov, err := governance.Open(ctx, memstore.New(nil), &governance.Options{Authorizer: keel.AllowAll{}, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer gov.Close()
	org, err := gov.Catalog().CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("ops@acme.test")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gov.Catalog().Get(ctx, org.DefaultProjectID); err != nil {
		t.Fatal(err)
	}
	name, level := "require-tags", policy.Advisory
	if _, err := gov.Policies().Create(ctx, "acme", policy.CreateRequest{Name: &name, EnforcementLevel: &level}); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.Policies().Get(ctx, "pol-missing"); keel.KindOf(err) != keel.KindNotFound {
		t.Fatalf("get of a missing policy: %v", err)
	}
	var got []string
	for _, op := range rec.Ended() {
		got = append(got, op.Name+" "+op.Resource+" "+keel.KindOf(op.Err).String())
	}
	want := []string{
		"project.FinishDeletions  no error", // Open finishes what a crash left
		"project.CreateOrganization  no error",
		"project.Get " + org.DefaultProjectID + " no error",
		"policy.Create acme no error",
		"policy.Get pol-missing not found",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("operations:\n%q\nwant\n%q", got, want)
	}

	rec.Refuse(keel.KindUnavailable)
	if _, err := gov.Catalog().CreateOrganization(ctx, project.OrganizationRequest{Name: new("beta"), Email: new("ops@beta.test")}); keel.KindOf(err) != keel.KindUnavailable {
		t.Fatalf("refused create: %v", err)
	}
	rec.Refuse(nil)
	if _, err := gov.Catalog().GetOrganization(ctx, "beta"); keel.KindOf(err) != keel.KindNotFound {
		t.Fatalf("the refused organization exists: %v", err)
	}
}
