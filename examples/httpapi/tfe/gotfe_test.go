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

// TestOrganizationsWithGoTFE: what the tfe provider does with an
// organization: create, then PATCH its settings, then read them back,
// with HCP Terraform's defaults for those never sent.
func TestOrganizationsWithGoTFE(t *testing.T) {
	s := newServer(t)
	c := s.client(t, "root")
	ctx := context.Background()
	org, err := c.Organizations.Create(ctx, gotfe.OrganizationCreateOptions{Name: gotfe.String("beta"), Email: gotfe.String("a@b.test")})
	if err != nil {
		t.Fatal(err)
	}
	if org.CollaboratorAuthPolicy != gotfe.AuthPolicyPassword || !org.SpeculativePlanManagementEnabled || !org.CostEstimationEnabled ||
		org.Permissions == nil || !org.Permissions.CanUpdate || !org.Permissions.CanDestroy || org.DefaultProject == nil {
		t.Fatalf("created %+v", org)
	}
	org, err = c.Organizations.Update(ctx, "beta", gotfe.OrganizationUpdateOptions{
		Name: gotfe.String("beta"), Email: gotfe.String("new@b.test"),
		CollaboratorAuthPolicy:           gotfe.AuthPolicy(gotfe.AuthPolicyTwoFactor),
		SpeculativePlanManagementEnabled: gotfe.Bool(false), AllowForceDeleteWorkspaces: gotfe.Bool(true),
		SessionTimeout: gotfe.Int(60),
	})
	if err != nil {
		t.Fatal(err)
	}
	read, err := c.Organizations.Read(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []*gotfe.Organization{org, read} {
		if o.Email != "new@b.test" || o.CollaboratorAuthPolicy != gotfe.AuthPolicyTwoFactor || o.SpeculativePlanManagementEnabled ||
			!o.AllowForceDeleteWorkspaces || o.SessionTimeout != 60 || o.UserTokensEnabled == nil || !*o.UserTokensEnabled {
			t.Fatalf("after update %+v", o)
		}
	}
	if _, err := c.Organizations.Update(ctx, "beta", gotfe.OrganizationUpdateOptions{Name: gotfe.String("gamma")}); err == nil {
		t.Fatal("rename accepted")
	}
	list, err := s.client(t, "reader").Organizations.List(ctx, nil)
	if err != nil || len(list.Items) != 2 || list.Items[0].Permissions.CanUpdate {
		t.Fatalf("reader's list %+v, %v", list, err)
	}
}

// TestWorkspacesWithGoTFE: what the tfe provider sends and reads of a
// workspace: the settings of its create, rename through an update, the
// permissions its delete reads, safe-delete, and the pages of the list.
func TestWorkspacesWithGoTFE(t *testing.T) {
	s := newServer(t)
	c := s.client(t, "root")
	ctx := context.Background()
	ws, err := c.Workspaces.Create(ctx, "acme", gotfe.WorkspaceCreateOptions{
		Name: gotfe.String("web"), AllowDestroyPlan: gotfe.Bool(false), FileTriggersEnabled: gotfe.Bool(false),
		QueueAllRuns: gotfe.Bool(true), SpeculativeEnabled: gotfe.Bool(false), StructuredRunOutputEnabled: gotfe.Bool(false),
		AutoApplyRunTrigger: gotfe.Bool(false), WorkingDirectory: gotfe.String("infra"), Description: gotfe.String("the web"),
	})
	if err != nil {
		t.Fatal(err)
	}
	read, err := c.Workspaces.ReadByIDWithOptions(ctx, ws.ID, &gotfe.WorkspaceReadOptions{Include: []gotfe.WSIncludeOpt{gotfe.WSEffectiveTagBindings}})
	if err != nil {
		t.Fatal(err)
	}
	// The provider reads them after every workspace read: keel keeps none.
	if consumers, err := c.Workspaces.ListRemoteStateConsumers(ctx, ws.ID, nil); err != nil || len(consumers.Items) != 0 {
		t.Fatalf("remote state consumers: %+v, %v", consumers, err)
	}
	if _, err := c.Workspaces.ListRemoteStateConsumers(ctx, "ws-nothere", nil); !errors.Is(err, gotfe.ErrResourceNotFound) {
		t.Fatalf("remote state consumers of a missing workspace: %v", err)
	}
	for _, w := range []*gotfe.Workspace{ws, read} {
		if w.AllowDestroyPlan || w.FileTriggersEnabled || !w.QueueAllRuns || w.SpeculativeEnabled || w.StructuredRunOutputEnabled ||
			w.WorkingDirectory != "infra" || w.Description != "the web" || w.ExecutionMode != "remote" || !w.Operations ||
			w.Organization == nil || w.Organization.Name != "acme" || w.Permissions == nil || w.Permissions.CanForceDelete == nil || !*w.Permissions.CanForceDelete {
			t.Fatalf("workspace %+v", w)
		}
	}
	ws, err = c.Workspaces.UpdateByID(ctx, ws.ID, gotfe.WorkspaceUpdateOptions{Name: gotfe.String("frontend"), SpeculativeEnabled: gotfe.Bool(true)})
	if err != nil || ws.Name != "frontend" || !ws.SpeculativeEnabled || ws.QueueAllRuns != true {
		t.Fatalf("updated %+v, %v", ws, err)
	}
	if byName, err := c.Workspaces.Read(ctx, "acme", "frontend"); err != nil || byName.ID != ws.ID {
		t.Fatalf("read by new name %+v, %v", byName, err)
	}
	for _, n := range []string{"a", "b", "c"} {
		if _, err := c.Workspaces.Create(ctx, "acme", gotfe.WorkspaceCreateOptions{Name: gotfe.String(n)}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.Workspaces.List(ctx, "acme", &gotfe.WorkspaceListOptions{ListOptions: gotfe.ListOptions{PageNumber: 2, PageSize: 3}})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "frontend" || list.TotalCount != 4 || list.TotalPages != 2 {
		t.Fatalf("page 2: %+v, %v", list, err)
	}
	list, err = c.Workspaces.List(ctx, "acme", &gotfe.WorkspaceListOptions{Search: "FRONT"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("search: %+v, %v", list, err)
	}
	if err := c.Workspaces.SafeDeleteByID(ctx, ws.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Workspaces.SafeDelete(ctx, "acme", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Workspaces.ReadByID(ctx, ws.ID); !errors.Is(err, gotfe.ErrResourceNotFound) {
		t.Fatalf("read after safe delete: %v", err)
	}
}

// TestTeamsAndProjectAccessWithGoTFE: what the tfe provider does with a
// team and its project access: create with settings, update, read the
// access back, change it to a custom level, remove it, delete the team.
func TestTeamsAndProjectAccessWithGoTFE(t *testing.T) {
	s := newServer(t)
	c := s.client(t, "root")
	ctx := context.Background()
	team, err := c.Teams.Create(ctx, "acme", gotfe.TeamCreateOptions{Name: gotfe.String("devs"), AllowMemberTokenManagement: gotfe.Bool(false),
		OrganizationAccess: &gotfe.OrganizationAccessOptions{ReadWorkspaces: gotfe.Bool(true)}})
	if err != nil || team.AllowMemberTokenManagement || team.Visibility != "secret" || !team.OrganizationAccess.ReadWorkspaces {
		t.Fatalf("team %+v, %v", team, err)
	}
	team, err = c.Teams.Update(ctx, team.ID, gotfe.TeamUpdateOptions{Name: gotfe.String("ops"), Visibility: gotfe.String("organization")})
	if err != nil || team.Name != "ops" || team.Visibility != "organization" || !team.OrganizationAccess.ReadWorkspaces {
		t.Fatalf("updated %+v, %v", team, err)
	}
	// The provider imports a team by its name through the list.
	list, err := c.Teams.List(ctx, "acme", &gotfe.TeamListOptions{Names: []string{"ops"}})
	if err != nil || len(list.Items) != 1 || list.Items[0].ID != team.ID || list.TotalCount != 1 {
		t.Fatalf("team list by name: %+v, %v", list, err)
	}
	p, err := c.Projects.Create(ctx, "acme", gotfe.ProjectCreateOptions{Name: "apps"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.TeamProjectAccess.Add(ctx, gotfe.TeamProjectAccessAddOptions{Access: gotfe.TeamProjectAccessRead,
		Team: &gotfe.Team{ID: team.ID}, Project: &gotfe.Project{ID: p.ID},
		ProjectAccess: &gotfe.TeamProjectAccessProjectPermissionsOptions{}, WorkspaceAccess: &gotfe.TeamProjectAccessWorkspacePermissionsOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	read, err := c.TeamProjectAccess.Read(ctx, a.ID)
	if err != nil || read.Access != gotfe.TeamProjectAccessRead || read.Team.ID != team.ID || read.Project.ID != p.ID {
		t.Fatalf("read %+v, %v", read, err)
	}
	custom := gotfe.TeamProjectAccessCustom
	up, err := c.TeamProjectAccess.Update(ctx, a.ID, gotfe.TeamProjectAccessUpdateOptions{Access: &custom,
		ProjectAccess:   &gotfe.TeamProjectAccessProjectPermissionsOptions{Teams: gotfe.ProjectTeamsPermission(gotfe.ProjectTeamsPermissionManage)},
		WorkspaceAccess: &gotfe.TeamProjectAccessWorkspacePermissionsOptions{Runs: gotfe.WorkspaceRunsPermission(gotfe.WorkspaceRunsPermissionApply), Create: gotfe.Bool(true)}})
	if err != nil || up.Access != custom || up.ProjectAccess.ProjectTeamsPermission != gotfe.ProjectTeamsPermissionManage ||
		up.WorkspaceAccess.WorkspaceRunsPermission != gotfe.WorkspaceRunsPermissionApply || !up.WorkspaceAccess.WorkspaceCreatePermission {
		t.Fatalf("custom %+v, %v", up, err)
	}
	if err := c.TeamProjectAccess.Remove(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TeamProjectAccess.Read(ctx, a.ID); !errors.Is(err, gotfe.ErrResourceNotFound) {
		t.Fatalf("read removed: %v", err)
	}
	if err := c.Teams.Delete(ctx, team.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Teams.Read(ctx, team.ID); !errors.Is(err, gotfe.ErrResourceNotFound) {
		t.Fatalf("read deleted team: %v", err)
	}
}
