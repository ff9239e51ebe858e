package project

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/storagetest"
)

// TestTeamSettings: defaults, settings kept on create, an update that
// renames and changes only what it sends, organization access merged by
// name.
func TestTeamSettings(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		team, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs"), TeamSettings: TeamSettings{OrganizationAccess: map[string]bool{"read-workspaces": true}}})
		if err != nil {
			t.Fatal(err)
		}
		s := team.Settings
		if *s.Visibility != visibilitySecret || !*s.AllowMemberTokenManagement || !s.OrganizationAccess["read-workspaces"] ||
			s.OrganizationAccess["manage-policies"] || len(s.OrganizationAccess) != len(slices.Clone(organizationAccessNames)) {
			t.Fatalf("created %+v", s)
		}
		got, err := e.c.UpdateTeam(root(), team.ID, TeamRequest{Name: ptr("ops"), TeamSettings: TeamSettings{
			AllowMemberTokenManagement: ptr(false), OrganizationAccess: map[string]bool{"manage-policies": true},
		}})
		if err != nil {
			t.Fatal(err)
		}
		read, err := e.c.GetTeam(root(), team.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []Team{got, read} {
			if x.Name != "ops" || *x.Settings.AllowMemberTokenManagement || !x.Settings.OrganizationAccess["read-workspaces"] ||
				!x.Settings.OrganizationAccess["manage-policies"] || *x.Settings.Visibility != visibilitySecret {
				t.Fatalf("after update %+v", x)
			}
		}
		if _, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("DEVS")}); err != nil {
			t.Fatalf("the old name is not free: %v", err)
		}
		if _, err := e.c.UpdateTeam(root(), team.ID, TeamRequest{Name: ptr("devs")}); !errors.Is(err, keel.KindAlreadyExists) {
			t.Fatalf("taken name: %v", err)
		}
	})
}

// TestTeamRulesNameGoFields: every broken rule of a team at once, on Go
// paths, and a refused update changes nothing.
func TestTeamRulesNameGoFields(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		_, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("a b"), TeamSettings: TeamSettings{Visibility: ptr("public"), OrganizationAccess: map[string]bool{"fly": true}}})
		if want := []string{"Name", "Visibility", `OrganizationAccess["fly"]`}; !slices.Equal(fields(err), want) {
			t.Fatalf("err %v fields %q", err, fields(err))
		}
		team, _ := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		if _, err := e.c.UpdateTeam(root(), team.ID, TeamRequest{Name: ptr("x"), TeamSettings: TeamSettings{Visibility: ptr("public")}}); !slices.Equal(fields(err), []string{"Visibility"}) {
			t.Fatalf("update: %v", err)
		}
		if read, _ := e.c.GetTeam(root(), team.ID); read.Name != "devs" {
			t.Fatalf("a refused update renamed: %+v", read)
		}
	})
}

// TestDeleteTeamRemovesItsAccess: a deleted team is gone with its access
// to every project, whose team counts drop; deleting needs delete.
func TestDeleteTeamRemovesItsAccess(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := rules(t, map[string][]keel.Rule{
			"reader": {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead}}},
		})
		e := newEnv(t, open, authz, nil)
		p := e.mkProject(t, "apps")
		team, _ := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		for _, prj := range []string{p.ID, e.org.DefaultProjectID} {
			if _, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: prj, TeamID: team.ID, Access: "write"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.c.DeleteTeam(as("r", "reader"), team.ID); !errors.Is(err, keel.KindForbidden) {
			t.Fatalf("reader delete: %v", err)
		}
		if err := e.c.DeleteTeam(as("n"), team.ID); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("delete by a caller who cannot read: %v", err)
		}
		if err := e.c.DeleteTeam(root(), team.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.GetTeam(root(), team.ID); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("read deleted team: %v", err)
		}
		for _, prj := range []string{p.ID, e.org.DefaultProjectID} {
			got, _ := e.c.Get(root(), prj)
			list, _ := teamAccesses(e.c, root(), prj)
			if got.TeamCount != 0 || len(list) != 0 {
				t.Fatalf("project %s keeps %d teams, %v", prj, got.TeamCount, list)
			}
		}
	})
}

// TestCustomTeamAccess: a custom level keeps the values sent over the
// custom defaults; read, update and remove of one access; an update of an
// access that does not exist is not found; bad values name their Go path.
func TestCustomTeamAccess(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "apps")
		team, _ := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		a, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "custom",
			ProjectAccess:   &ProjectAccess{Teams: "manage"},
			WorkspaceAccess: &WorkspaceAccess{Runs: "apply", Create: true}})

		if err != nil {
			t.Fatal(err)
		}
		want := TeamAccess{TeamID: team.ID, ProjectID: p.ID, Access: "custom",
			ProjectAccess:   &ProjectAccess{Settings: "read", Teams: "manage", VariableSets: "none"},
			WorkspaceAccess: &WorkspaceAccess{Runs: "apply", SentinelMocks: "none", StateVersions: "none", Variables: "none", Create: true}}
		read, err := e.c.GetTeamAccess(root(), p.ID, team.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range []TeamAccess{a, read} {
			if got.Access != want.Access || *got.ProjectAccess != *want.ProjectAccess || *got.WorkspaceAccess != *want.WorkspaceAccess {
				t.Fatalf("access %+v %+v %+v", got, got.ProjectAccess, got.WorkspaceAccess)
			}
		}
		up, err := e.c.UpdateTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, WorkspaceAccess: &WorkspaceAccess{Variables: "write"}})
		if err != nil || up.Access != "custom" || up.WorkspaceAccess.Variables != "write" || up.ProjectAccess.Teams != "manage" {
			t.Fatalf("updated %+v, %v", up, err)
		}
		if up, err := e.c.UpdateTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "admin"}); err != nil || up.Access != "admin" {
			t.Fatalf("to admin %+v, %v", up, err)
		}
		_, err = e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "custom",
			ProjectAccess: &ProjectAccess{Settings: "own"}, WorkspaceAccess: &WorkspaceAccess{Runs: "destroy"}})

		if want := []string{"ProjectAccess.Settings", "WorkspaceAccess.Runs"}; !slices.Equal(fields(err), want) {
			t.Fatalf("bad values: %v", err)
		}
		if err := e.c.DeleteTeamAccess(root(), p.ID, team.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.GetTeamAccess(root(), p.ID, team.ID); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("read removed access: %v", err)
		}
		if _, err := e.c.UpdateTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "read"}); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("update of no access: %v", err)
		}
		if got, _ := e.c.Get(root(), p.ID); got.TeamCount != 0 {
			t.Fatalf("team count %d", got.TeamCount)
		}
	})
}

// TestListTeams: name order (the owners team among the others), pages, a
// names filter and a query (both ignoring case, together both apply), and
// an organization hidden from a caller who cannot read its teams.
func TestListTeams(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		for _, n := range []string{"ops", "Devs", "audit"} {
			if _, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new(n)}); err != nil {
				t.Fatal(err)
			}
		}
		names := func(p keel.CountedPage[Team]) []string {
			var out []string
			for _, tm := range p.Items {
				out = append(out, tm.Name)
			}
			return out
		}
		for _, tc := range []struct {
			opts  ListTeamsRequest
			want  []string
			total int
		}{
			{ListTeamsRequest{}, []string{"audit", "Devs", "ops", "owners"}, 4},
			{ListTeamsRequest{ListRequest: keel.ListRequest{Limit: 3}, Offset: 3}, []string{"owners"}, 4},
			{ListTeamsRequest{Offset: 160}, nil, 4},
			{ListTeamsRequest{Names: []string{"OPS", "devs", "nobody"}}, []string{"Devs", "ops"}, 2},
			{ListTeamsRequest{Query: "O"}, []string{"ops", "owners"}, 2},
			{ListTeamsRequest{Query: "DEV"}, []string{"Devs"}, 1},
			{ListTeamsRequest{Query: "o", Names: []string{"devs", "ops"}}, []string{"ops"}, 1},
			{ListTeamsRequest{Query: "nobody"}, nil, 0},
		} {
			page, err := e.c.ListTeams(root(), "acme", tc.opts)
			if err != nil || !slices.Equal(names(page), tc.want) || page.Matching != tc.total {
				t.Errorf("ListTeams(%+v) = %q (total %d), %v; want %q (total %d)", tc.opts, names(page), page.Matching, err, tc.want, tc.total)
			}
		}
		e.c.authz = rules(t, map[string][]keel.Rule{
			"org": {{Path: "organizations/acme", Capabilities: []keel.Capability{keel.CapRead}}},
		})
		if _, err := e.c.ListTeams(as("o", "org"), "acme", ListTeamsRequest{}); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("list by a caller who reads the organization but not its teams: %v", err)
		}
		if _, err := e.c.ListTeams(as("n"), "acme", ListTeamsRequest{}); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("list by a caller who cannot read the organization: %v", err)
		}
		if _, err := e.c.ListTeams(root(), "acme", ListTeamsRequest{Offset: -1}); !slices.Equal(fields(err), []string{"Offset"}) {
			t.Fatalf("a negative offset: %v", err)
		}
	})
}

// TestOwnersTeam: every organization is created with its owners team,
// which holds every organization permission and is found by its name; it
// cannot be deleted (conflict) or renamed (invalid, on Name), and a
// refusal leaves the store as it was; its settings can be changed.
func TestOwnersTeam(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		page, err := e.c.ListTeams(root(), "acme", ListTeamsRequest{Names: []string{"OWNERS"}})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("owners team: %+v, %v", page.Items, err)
		}
		owners := page.Items[0]
		if owners.Name != OwnersTeamName || !owners.Owners || owners.CanDestroy || !owners.CanUpdate || owners.Org != "acme" {
			t.Fatalf("owners team %+v", owners)
		}
		for _, n := range slices.Clone(organizationAccessNames) {
			if !owners.Settings.OrganizationAccess[n] {
				t.Errorf("owners team without %s", n)
			}
		}
		other, _ := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		if other.Owners || !other.CanDestroy {
			t.Fatalf("another team %+v", other)
		}
		if _, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("Owners")}); !errors.Is(err, keel.KindAlreadyExists) {
			t.Fatalf("a second owners team: %v", err)
		}
		before := storagetest.Dump(t, e.raw)
		if err := e.c.DeleteTeam(root(), owners.ID); keel.KindOf(err) != keel.KindConflict {
			t.Fatalf("delete the owners team: %v", err)
		}
		if _, err := e.c.UpdateTeam(root(), owners.ID, TeamRequest{Name: ptr("admins")}); !slices.Equal(fields(err), []string{"Name"}) {
			t.Fatalf("rename the owners team: %v", err)
		}
		if !maps.Equal(before, storagetest.Dump(t, e.raw)) {
			t.Fatal("a refused delete or rename changed the store")
		}
		got, err := e.c.UpdateTeam(root(), owners.ID, TeamRequest{Name: ptr(OwnersTeamName), TeamSettings: TeamSettings{Visibility: ptr(visibilityOrganization)}})
		if err != nil || *got.Settings.Visibility != visibilityOrganization || got.Name != OwnersTeamName || !got.Owners {
			t.Fatalf("update the owners team's settings: %+v, %v", got, err)
		}
		if _, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("beta"), Email: new("")}); err != nil {
			t.Fatal(err)
		}
		if page, _ := e.c.ListTeams(root(), "beta", ListTeamsRequest{}); len(page.Items) != 1 || !page.Items[0].Owners || page.Items[0].ID == owners.ID {
			t.Fatalf("teams of a new organization: %+v", page.Items)
		}
	})
}

// TestAddTeamAccess: adding an access the team has already is refused
// (already exists) and leaves the store as it was; SetTeamAccess still
// changes it.
func TestAddTeamAccess(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "apps")
		team, _ := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		a, err := e.c.CreateTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "write"})
		if err != nil || a.Access != "write" {
			t.Fatalf("add: %+v, %v", a, err)
		}
		before := storagetest.Dump(t, e.raw)
		if _, err := e.c.CreateTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "admin"}); !errors.Is(err, keel.KindAlreadyExists) {
			t.Fatalf("add again: %v", err)
		}
		if !maps.Equal(before, storagetest.Dump(t, e.raw)) {
			t.Fatal("a refused add changed the store")
		}
		if got, _ := e.c.GetTeamAccess(root(), p.ID, team.ID); got.Access != "write" {
			t.Fatalf("access after a refused add: %+v", got)
		}
		if got, _ := e.c.Get(root(), p.ID); got.TeamCount != 1 {
			t.Fatalf("team count %d", got.TeamCount)
		}
		if _, err := e.c.CreateTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: "team-nope", Access: "read"}); !slices.Equal(fields(err), []string{"TeamID"}) {
			t.Fatalf("add for no team: %v", err)
		}
		if a, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "admin"}); err != nil || a.Access != "admin" {
			t.Fatalf("set: %+v, %v", a, err)
		}
	})
}

// TestListTeamAccesses: pages of the teams with access to a project, by
// team id; a page past the end is empty with the true total; a removed
// team's access is not listed; a project the caller cannot read is not
// found; a page number past the bound is invalid.
func TestListTeamAccesses(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "apps")
		var ids []string
		for _, n := range []string{"a", "b", "c"} {
			team, _ := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new(n)})
			if _, err := e.c.CreateTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, team.ID)
		}
		slices.Sort(ids)
		teams := func(pg keel.CountedPage[TeamAccess]) []string {
			var out []string
			for _, a := range pg.Items {
				out = append(out, a.TeamID)
			}
			return out
		}
		for _, tc := range []struct {
			opts  ListTeamAccessesRequest
			want  []string
			total int
		}{
			{ListTeamAccessesRequest{}, ids, 3},
			{ListTeamAccessesRequest{ListRequest: keel.ListRequest{Limit: 2}, Offset: 2}, ids[2:], 3},
			{ListTeamAccessesRequest{ListRequest: keel.ListRequest{Limit: 100}, Offset: 99800}, nil, 3},
		} {
			pg, err := e.c.ListTeamAccesses(root(), p.ID, tc.opts)
			if err != nil || !slices.Equal(teams(pg), tc.want) || pg.Matching != tc.total || pg.Total != tc.total {
				t.Errorf("ListTeamAccesses(%+v) = %q %+v, %v; want %q (total %d)", tc.opts, teams(pg), pg, err, tc.want, tc.total)
			}
		}
		if err := e.c.DeleteTeam(root(), ids[0]); err != nil {
			t.Fatal(err)
		}
		if pg, _ := e.c.ListTeamAccesses(root(), p.ID, ListTeamAccessesRequest{}); !slices.Equal(teams(pg), ids[1:]) || pg.Matching != 2 {
			t.Fatalf("after a team's deletion: %q %+v", teams(pg), pg)
		}
		e.c.authz = rules(t, map[string][]keel.Rule{})
		if _, err := e.c.ListTeamAccesses(as("n"), p.ID, ListTeamAccessesRequest{}); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("a caller who cannot read the project: %v", err)
		}
		if _, err := e.c.ListTeamAccesses(root(), p.ID, ListTeamAccessesRequest{Offset: -1}); !slices.Equal(fields(err), []string{"Offset"}) {
			t.Fatalf("a negative offset: %v", err)
		}
	})
}
