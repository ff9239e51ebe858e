package tfe_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	gotfe "github.com/hashicorp/go-tfe"
)

func TestProjectsWithGoTFE(t *testing.T) {
	s := newServer(t)
	c := s.client(t, "root")
	ctx := context.Background()

	p, err := c.Projects.Create(ctx, "acme", gotfe.ProjectCreateOptions{Name: "networking", Description: gotfe.String("vpcs")})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "networking" || p.Description != "vpcs" || p.Organization.Name != "acme" {
		t.Fatalf("created %+v", p)
	}
	for _, n := range []string{"storage", "compute-db", "Db-admin"} {
		if _, err := c.Projects.Create(ctx, "acme", gotfe.ProjectCreateOptions{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	p, err = c.Projects.Update(ctx, p.ID, gotfe.ProjectUpdateOptions{Name: gotfe.String("network")})
	if err != nil || p.Name != "network" || p.Description != "vpcs" {
		t.Fatalf("updated %+v, %v", p, err)
	}
	got, err := c.Projects.Read(ctx, p.ID)
	if err != nil || got.Name != "network" {
		t.Fatalf("read %+v, %v", got, err)
	}

	tests := []struct {
		name  string
		opts  *gotfe.ProjectListOptions
		want  []string
		pages int
	}{
		{"all", nil, []string{"compute-db", "Db-admin", "Default Project", "network", "storage"}, 1},
		{"q", &gotfe.ProjectListOptions{Query: "DB"}, []string{"compute-db", "Db-admin"}, 1},
		{"filter names wins", &gotfe.ProjectListOptions{Name: "storage,NETWORK", Query: "db"}, []string{"network", "storage"}, 1},
		{"page 2 of 2", &gotfe.ProjectListOptions{ListOptions: gotfe.ListOptions{PageNumber: 2, PageSize: 2}}, []string{"Default Project", "network"}, 3},
		{"page past the end", &gotfe.ProjectListOptions{ListOptions: gotfe.ListOptions{PageNumber: 9, PageSize: 2}}, nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := c.Projects.List(ctx, "acme", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range list.Items {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, tt.want) || list.TotalPages != tt.pages {
				t.Fatalf("names %q pages %d", names, list.TotalPages)
			}
		})
	}

	// Validation errors come back as 422 with the field problem.
	_, err = c.Projects.Create(ctx, "acme", gotfe.ProjectCreateOptions{Name: " bad"})
	if err == nil {
		t.Fatal("bad name accepted")
	}
	if err := c.Projects.Delete(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Projects.Read(ctx, p.ID); !errors.Is(err, gotfe.ErrResourceNotFound) {
		t.Fatalf("read deleted: %v", err)
	}
}

func TestSetupEndToEndWithGoTFE(t *testing.T) {
	s := newServer(t)
	c := s.client(t, "root")
	ctx := context.Background()
	org, err := c.Organizations.Create(ctx, gotfe.OrganizationCreateOptions{Name: gotfe.String("beta"), Email: gotfe.String("a@b.test")})
	if err != nil || org.Name != "beta" {
		t.Fatalf("org %+v, %v", org, err)
	}
	if _, err := c.Organizations.Read(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	p, err := c.Projects.Create(ctx, "beta", gotfe.ProjectCreateOptions{Name: "apps"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := c.Workspaces.Create(ctx, "beta", gotfe.WorkspaceCreateOptions{Name: gotfe.String("web"), Project: &gotfe.Project{ID: p.ID}})
	if err != nil || ws.Project == nil || ws.Project.ID != p.ID {
		t.Fatalf("workspace %+v, %v", ws, err)
	}
	team, err := c.Teams.Create(ctx, "beta", gotfe.TeamCreateOptions{Name: gotfe.String("devs")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TeamProjectAccess.Add(ctx, gotfe.TeamProjectAccessAddOptions{
		Access: gotfe.TeamProjectAccessWrite, Team: &gotfe.Team{ID: team.ID}, Project: &gotfe.Project{ID: p.ID},
	}); err != nil {
		t.Fatal(err)
	}
	// Moving the workspace back to the default project through an update.
	def, err := c.Projects.List(ctx, "beta", &gotfe.ProjectListOptions{Name: "Default Project"})
	if err != nil || len(def.Items) != 1 {
		t.Fatalf("default project: %v", err)
	}
	ws, err = c.Workspaces.UpdateByID(ctx, ws.ID, gotfe.WorkspaceUpdateOptions{Project: &gotfe.Project{ID: def.Items[0].ID}})
	if err != nil || ws.Project.ID != def.Items[0].ID {
		t.Fatalf("moved %+v, %v", ws, err)
	}
	if err := c.Projects.Delete(ctx, p.ID); err != nil {
		t.Fatalf("delete emptied project: %v", err)
	}
	if err := c.Workspaces.DeleteByID(ctx, ws.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Organizations.Delete(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
}

func TestPoliciesWithGoTFE(t *testing.T) {
	s := newServer(t)
	c := s.client(t, "root")
	ctx := context.Background()
	level := gotfe.EnforcementSoft
	p, err := c.Policies.Create(ctx, "acme", gotfe.PolicyCreateOptions{Name: gotfe.String("no-public"), Description: gotfe.String("d"), EnforcementLevel: &level})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "no-public" || p.EnforcementLevel != gotfe.EnforcementSoft || !p.UpdatedAt.IsZero() || p.Kind != gotfe.Sentinel {
		t.Fatalf("created %+v", p)
	}
	code := []byte("main = rule { true }")
	s.clock.Advance(1e6)
	if err := c.Policies.Upload(ctx, p.ID, code); err != nil {
		t.Fatal(err)
	}
	got, err := c.Policies.Download(ctx, p.ID)
	if err != nil || !bytes.Equal(got, code) {
		t.Fatalf("downloaded %q, %v", got, err)
	}
	p, err = c.Policies.Read(ctx, p.ID)
	if err != nil || !p.UpdatedAt.Equal(t0.Add(1e6)) {
		t.Fatalf("read %+v, %v", p, err)
	}
	path, mode := "no-public.policy", gotfe.EnforcementAdvisory
	// The specification's enforce map is what this update checks.
	//lint:ignore SA1019 deprecated in go-tfe, still the documented form
	p, err = c.Policies.Update(ctx, p.ID, gotfe.PolicyUpdateOptions{Enforce: []*gotfe.EnforcementOptions{{Path: &path, Mode: &mode}}})
	//lint:ignore SA1019 deprecated in go-tfe, still the documented form
	if err != nil || p.Enforce[0].Mode != gotfe.EnforcementAdvisory || p.Name != "no-public" {
		t.Fatalf("updated %+v, %v", p, err)
	}
	for _, n := range []string{"net-a", "net-b", "net-c"} {
		if _, err := c.Policies.Create(ctx, "acme", gotfe.PolicyCreateOptions{Name: gotfe.String(n), EnforcementLevel: &level}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		opts  *gotfe.PolicyListOptions
		want  []string
		total int
	}{
		{"all", nil, []string{"net-a", "net-b", "net-c", "no-public"}, 4},
		{"search", &gotfe.PolicyListOptions{Search: "NET"}, []string{"net-a", "net-b", "net-c"}, 3},
		{"page 2", &gotfe.PolicyListOptions{ListOptions: gotfe.ListOptions{PageNumber: 2, PageSize: 3}}, []string{"no-public"}, 4},
		{"page past the end", &gotfe.PolicyListOptions{ListOptions: gotfe.ListOptions{PageNumber: 5, PageSize: 3}}, nil, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := c.Policies.List(ctx, "acme", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range list.Items {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, tt.want) || list.TotalCount != tt.total {
				t.Fatalf("names %q total %d", names, list.TotalCount)
			}
		})
	}
	if err := c.Policies.Delete(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Policies.Read(ctx, p.ID); !errors.Is(err, gotfe.ErrResourceNotFound) {
		t.Fatalf("read deleted: %v", err)
	}
	// A caller without manage-policies sees not found, never forbidden.
	if _, err := s.client(t, "reader").Policies.List(ctx, "acme", nil); !errors.Is(err, gotfe.ErrResourceNotFound) {
		t.Fatalf("reader list: %v", err)
	}
}

// TestRecreatedOrganizationWithGoTFE: deleting an organization over the
// wire deletes its policies, projects, workspaces and teams (package
// project's rule, not the adapter's); created again, it has none.
func TestRecreatedOrganizationWithGoTFE(t *testing.T) {
	s := newServer(t)
	c := s.client(t, "root")
	ctx := context.Background()
	level := gotfe.EnforcementAdvisory
	pol, err := c.Policies.Create(ctx, "acme", gotfe.PolicyCreateOptions{Name: gotfe.String("old"), EnforcementLevel: &level})
	if err != nil {
		t.Fatal(err)
	}
	prj, err := c.Projects.Create(ctx, "acme", gotfe.ProjectCreateOptions{Name: "apps"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := c.Workspaces.Create(ctx, "acme", gotfe.WorkspaceCreateOptions{Name: gotfe.String("web"), Project: &gotfe.Project{ID: prj.ID}})
	if err != nil {
		t.Fatal(err)
	}
	team, err := c.Teams.Create(ctx, "acme", gotfe.TeamCreateOptions{Name: gotfe.String("devs")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Organizations.Delete(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Organizations.Create(ctx, gotfe.OrganizationCreateOptions{Name: gotfe.String("acme"), Email: gotfe.String("a@b.test")}); err != nil {
		t.Fatal(err)
	}
	if list, err := c.Policies.List(ctx, "acme", nil); err != nil || len(list.Items) != 0 || list.TotalCount != 0 {
		t.Fatalf("policies of the new acme: %+v, %v", list, err)
	}
	if prjs, err := c.Projects.List(ctx, "acme", nil); err != nil || len(prjs.Items) != 1 || prjs.Items[0].Name != "Default Project" {
		t.Fatalf("projects of the new acme: %+v, %v", prjs, err)
	}
	gone := map[string]error{}
	_, gone["policy"] = c.Policies.Read(ctx, pol.ID)
	_, gone["project"] = c.Projects.Read(ctx, prj.ID)
	_, gone["workspace"] = c.Workspaces.ReadByID(ctx, ws.ID)
	_, gone["workspace by name"] = c.Workspaces.Read(ctx, "acme", "web")
	_, gone["team"] = c.Teams.Read(ctx, team.ID)
	for what, err := range gone {
		if !errors.Is(err, gotfe.ErrResourceNotFound) {
			t.Errorf("read the old %s: %v", what, err)
		}
	}
}
