package project_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/project"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()

	// The catalog keeps its keys in the view of the store it is given.
	cat, err := project.New(storage.Sub(store, "project/"), nil) // no Authorizer: everything is allowed
	if err != nil {
		panic(err)
	}
	org, err := cat.CreateOrganization(ctx, project.OrganizationRequest{Name: new("acme"), Email: new("ops@acme.test")})
	if err != nil {
		panic(err)
	}
	name := "Networking"
	prj, err := cat.Create(ctx, "acme", project.ProjectRequest{Name: &name})
	if err != nil {
		panic(err)
	}
	ws, err := cat.CreateWorkspace(ctx, "acme", project.WorkspaceRequest{Name: new("vpc"), ProjectID: new(prj.ID)})
	if err != nil {
		panic(err)
	}

	// A project that holds workspaces cannot be deleted.
	err = cat.Delete(ctx, prj.ID)
	fmt.Println(errors.Is(err, keel.KindConflict))

	// Move the workspace to the default project; then it can.
	if err := cat.MoveWorkspaces(ctx, org.DefaultProjectID, []string{ws.ID}); err != nil {
		panic(err)
	}
	// Walk the projects, one page of one at a time, by cursor.
	projects := keel.All(ctx, 1, func(ctx context.Context, r keel.ListRequest) (keel.Page[project.Project], error) {
		page, err := cat.List(ctx, "acme", project.ListRequest{ListRequest: r, Sort: "-name"})
		return page.Page, err
	})
	for p, err := range projects {
		if err != nil {
			panic(err)
		}
		fmt.Println(p.Name, p.WorkspaceCount)
	}
	fmt.Println(cat.Delete(ctx, prj.ID))
	// Output:
	// true
	// Networking 0
	// Default Project 1
	// <nil>
}
