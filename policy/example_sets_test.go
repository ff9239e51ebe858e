package policy_test

import (
	"context"
	"fmt"

	"github.com/keelhq/keel/policy"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// A policy set groups policies and applies them to workspaces and
// projects; members are added and removed by kind.
func ExampleService_CreateSet() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()
	orgs, err := project.New(storage.Sub(store, "project/"), nil)
	if err != nil {
		panic(err)
	}
	policies, err := policy.New(storage.Sub(store, "policy/"), &policy.Options{Organizations: orgs})
	if err != nil {
		panic(err)
	}
	org, err := orgs.CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("")})
	if err != nil {
		panic(err)
	}
	ws, err := orgs.CreateWorkspace(ctx, "acme", project.WorkspaceRequest{Name: new("network")})
	if err != nil {
		panic(err)
	}
	p, err := policies.Create(ctx, "acme", policy.CreateRequest{Name: new("no-public-buckets"), EnforcementLevel: new(policy.Advisory)})
	if err != nil {
		panic(err)
	}
	ids, wss, prj, id := []string{p.ID}, []string{ws.ID}, org.DefaultProjectID, p.ID

	name, yes := "network", true
	set, err := policies.CreateSet(ctx, "acme", policy.CreateSetRequest{Name: &name, PolicyIDs: ids, WorkspaceIDs: wss})
	if err != nil {
		panic(err)
	}
	err = policies.AddSetMembers(ctx, set.ID, policy.SetProjects, []string{prj})
	if err != nil {
		panic(err)
	}
	err = policies.RemoveSetMembers(ctx, set.ID, policy.SetPolicies, []string{id})
	if err != nil {
		panic(err)
	}
	set, err = policies.UpdateSet(ctx, set.ID, policy.UpdateSetRequest{Overridable: &yes})
	if err != nil {
		panic(err)
	}
	fmt.Println(set.Name, len(set.PolicyIDs), len(set.WorkspaceIDs), len(set.ProjectIDs), set.Overridable)
	page, err := policies.ListSets(ctx, "acme", policy.ListSetsRequest{Search: "net"})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(page.Items), page.Matching)
	err = policies.DeleteSet(ctx, set.ID)
	fmt.Println(err)
	// Output:
	// network 0 1 1 true
	// 1 1
	// <nil>
}
