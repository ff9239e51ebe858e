package project

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/storagetest"
)

// sameAnswer fails t unless hidden (the answer for an existing object the
// caller may not read, named hiddenID) and missing (for an object that
// does not exist, named missingID) are the same answer: the same keel
// kind, the same fields, the same message once the ids are set aside.
func sameAnswer(t *testing.T, hidden error, hiddenID string, missing error, missingID string) {
	t.Helper()
	if hidden == nil || missing == nil {
		t.Fatalf("hidden: %v; missing: %v; want both refused", hidden, missing)
	}
	if kh, km := keel.KindOf(hidden), keel.KindOf(missing); kh != km {
		t.Fatalf("kind %v for a hidden object (%v), %v for a missing one (%v)", kh, hidden, km, missing)
	}
	if fh, fm := fields(hidden), fields(missing); !slices.Equal(fh, fm) {
		t.Fatalf("fields %q for a hidden object, %q for a missing one", fh, fm)
	}
	if mh, mm := strings.ReplaceAll(hidden.Error(), hiddenID, "<id>"), strings.ReplaceAll(missing.Error(), missingID, "<id>"); mh != mm {
		t.Fatalf("message %q for a hidden object, %q for a missing one", mh, mm)
	}
}

// TestCreateWorkspaceHidesProject: a project named by CreateWorkspace that
// the caller may not read answers as a missing one (KindInvalid on
// "ProjectID"), even with create on its workspaces, and nothing is
// written; a project the caller reads takes the workspace.
func TestCreateWorkspaceHidesProject(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		seen, hidden := e.mkProject(t, "seen"), e.mkProject(t, "hidden")
		e.c.authz = rules(t, map[string][]keel.Rule{
			"creator": {
				{Path: "organizations/acme", Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/projects/" + seen.ID, Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/projects/+/workspaces", Capabilities: []keel.Capability{keel.CapCreate}},
			},
			"org": {{Path: "organizations/acme", Capabilities: []keel.Capability{keel.CapRead}}},
		})
		ctx := as("c", "creator")
		before := storagetest.Dump(t, e.raw)
		_, errHidden := e.c.CreateWorkspace(ctx, "acme", WorkspaceRequest{Name: new("web"), ProjectID: new(hidden.ID)})
		_, errMissing := e.c.CreateWorkspace(ctx, "acme", WorkspaceRequest{Name: new("web"), ProjectID: new("prj-nope")})
		sameAnswer(t, errHidden, hidden.ID, errMissing, "prj-nope")
		// Issue 29: a caller without create was refused (403) on an
		// existing project and 422 on a missing one.
		orgOnly := as("o", "org")
		_, errHidden = e.c.CreateWorkspace(orgOnly, "acme", WorkspaceRequest{Name: new("web"), ProjectID: new(hidden.ID)})
		_, errMissing = e.c.CreateWorkspace(orgOnly, "acme", WorkspaceRequest{Name: new("web"), ProjectID: new("prj-nope")})
		sameAnswer(t, errHidden, hidden.ID, errMissing, "prj-nope")
		if !errors.Is(errHidden, keel.KindInvalid) || !slices.Equal(fields(errHidden), []string{"ProjectID"}) {
			t.Fatalf("hidden project: %v", errHidden)
		}
		if after := storagetest.Dump(t, e.raw); !maps.Equal(after, before) {
			t.Fatal("a refused create changed the store")
		}
		if w, err := e.c.CreateWorkspace(ctx, "acme", WorkspaceRequest{Name: new("web"), ProjectID: new(seen.ID)}); err != nil || w.ProjectID != seen.ID {
			t.Fatalf("create in a project the caller reads: %+v, %v", w, err)
		}
	})
}

// TestMoveWorkspacesHidesWorkspaces: a workspace the caller may not read
// is refused as a missing one (KindForbidden listing its id), even with
// move-workspaces on its project, and nothing moves.
func TestMoveWorkspacesHidesWorkspaces(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		src, dst := e.mkProject(t, "source"), e.mkProject(t, "target")
		seen, hidden := e.mkWorkspace(t, "seen", src.ID), e.mkWorkspace(t, "hidden", src.ID)
		e.c.authz = rules(t, map[string][]keel.Rule{
			"mover": {
				{Path: "organizations/acme", Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/projects/+", Capabilities: []keel.Capability{keel.CapRead, keel.CapMoveWorkspaces}},
				{Path: "organizations/acme/workspaces/" + seen.ID, Capabilities: []keel.Capability{keel.CapRead}},
			},
		})
		ctx := as("m", "mover")
		before := storagetest.Dump(t, e.raw)
		errHidden := e.c.MoveWorkspaces(ctx, dst.ID, []string{hidden.ID})
		errMissing := e.c.MoveWorkspaces(ctx, dst.ID, []string{"ws-nope"})
		sameAnswer(t, errHidden, hidden.ID, errMissing, "ws-nope")
		if !errors.Is(errHidden, keel.KindForbidden) || !strings.Contains(errHidden.Error(), hidden.ID) {
			t.Fatalf("hidden workspace: %v", errHidden)
		}
		if err := e.c.MoveWorkspaces(ctx, dst.ID, []string{seen.ID, hidden.ID}); !errors.Is(err, keel.KindForbidden) || strings.Contains(err.Error(), seen.ID) {
			t.Fatalf("move of a readable and a hidden workspace: %v", err)
		}
		if after := storagetest.Dump(t, e.raw); !maps.Equal(after, before) {
			t.Fatal("a refused move changed the store")
		}
		if err := e.c.MoveWorkspaces(ctx, dst.ID, []string{seen.ID}); err != nil {
			t.Fatalf("move of a workspace the caller reads: %v", err)
		}
	})
}

// TestTeamAccessHidesTeam: a team named by SetTeamAccess or
// UpdateTeamAccess that the caller may not read (read on the teams of the
// organization) answers as a missing one, and nothing is written.
func TestTeamAccessHidesTeam(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "apps")
		team, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		if err != nil {
			t.Fatal(err)
		}
		e.c.authz = rules(t, map[string][]keel.Rule{
			"manager": {
				{Path: "organizations/acme", Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/projects/+", Capabilities: []keel.Capability{keel.CapRead, keel.CapManageProjects}},
			},
			"teams": {{Path: "organizations/acme/teams", Capabilities: []keel.Capability{keel.CapRead}}},
		})
		ctx := as("m", "manager")
		before := storagetest.Dump(t, e.raw)
		_, errHidden := e.c.PutTeamAccess(ctx, TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "write"})
		_, errMissing := e.c.PutTeamAccess(ctx, TeamAccess{ProjectID: p.ID, TeamID: "team-nope", Access: "write"})
		sameAnswer(t, errHidden, team.ID, errMissing, "team-nope")
		if !errors.Is(errHidden, keel.KindInvalid) || !slices.Equal(fields(errHidden), []string{"TeamID"}) {
			t.Fatalf("set access of a hidden team: %v", errHidden)
		}
		if after := storagetest.Dump(t, e.raw); !maps.Equal(after, before) {
			t.Fatal("a refused set changed the store")
		}
		if _, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "read"}); err != nil {
			t.Fatal(err)
		}
		before = storagetest.Dump(t, e.raw)
		_, errHidden = e.c.UpdateTeamAccess(ctx, TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "write"})
		_, errMissing = e.c.UpdateTeamAccess(ctx, TeamAccess{ProjectID: p.ID, TeamID: "team-nope", Access: "write"})
		sameAnswer(t, errHidden, team.ID, errMissing, "team-nope")
		if !errors.Is(errHidden, keel.KindNotFound) {
			t.Fatalf("update access of a hidden team: %v", errHidden)
		}
		if after := storagetest.Dump(t, e.raw); !maps.Equal(after, before) {
			t.Fatal("a refused update changed the store")
		}
		if a, err := e.c.UpdateTeamAccess(as("m", "manager", "teams"), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "write"}); err != nil || a.Access != "write" {
			t.Fatalf("update by a caller who reads the team: %+v, %v", a, err)
		}
	})
}

// TestRemoveTeamAccessHidesTeam: a team named by RemoveTeamAccess that the
// caller may not read (read on the teams of the organization) answers as
// a team without access (keel.KindNotFound), whether it exists or not and
// whether it has access or not, even with manage-projects on the project;
// nothing is removed. A caller who reads the team removes its access.
func TestRemoveTeamAccessHidesTeam(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "apps")
		with, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		if err != nil {
			t.Fatal(err)
		}
		without, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("ops")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: with.ID, Access: "write"}); err != nil {
			t.Fatal(err)
		}
		e.c.authz = rules(t, map[string][]keel.Rule{
			"manager": {
				{Path: "organizations/acme", Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/projects/+", Capabilities: []keel.Capability{keel.CapRead, keel.CapManageProjects}},
			},
			"teams": {{Path: "organizations/acme/teams", Capabilities: []keel.Capability{keel.CapRead}}},
		})
		ctx := as("m", "manager")
		before := storagetest.Dump(t, e.raw)
		errWith := e.c.DeleteTeamAccess(ctx, p.ID, with.ID)
		errWithout := e.c.DeleteTeamAccess(ctx, p.ID, without.ID)
		errMissing := e.c.DeleteTeamAccess(ctx, p.ID, "team-nope")
		for _, err := range []error{errWith, errWithout, errMissing} {
			if !errors.Is(err, keel.KindNotFound) {
				t.Fatalf("remove access of a hidden team: %v, want not found", err)
			}
		}
		sameAnswer(t, errWith, with.ID, errMissing, "team-nope")
		sameAnswer(t, errWithout, without.ID, errMissing, "team-nope")
		if after := storagetest.Dump(t, e.raw); !maps.Equal(after, before) {
			t.Fatal("a refused remove changed the store")
		}
		if a, err := e.c.GetTeamAccess(root(), p.ID, with.ID); err != nil || a.Access != "write" {
			t.Fatalf("access after a refused remove: %+v, %v", a, err)
		}
		if got, err := e.c.Get(root(), p.ID); err != nil || got.TeamCount != 1 {
			t.Fatalf("project after a refused remove: %+v, %v", got, err)
		}
		reader := as("m", "manager", "teams")
		if err := e.c.DeleteTeamAccess(reader, p.ID, without.ID); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("remove access of a readable team without access: %v", err)
		}
		if err := e.c.DeleteTeamAccess(reader, p.ID, with.ID); err != nil {
			t.Fatalf("remove by a caller who reads the team: %v", err)
		}
		if _, err := e.c.GetTeamAccess(reader, p.ID, with.ID); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("access after its removal: %v", err)
		}
	})
}

// TestHiddenAnswersAsMissing: an organization, project, team or workspace
// that an operation names and the caller may not read (or, where the
// operation hides it so, may not act on) answers exactly as a missing one:
// the same kind and the same message once the ids are set aside (issue 29:
// the message quoted a missing id and not a hidden one).
func TestHiddenAnswersAsMissing(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "apps")
		w := e.mkWorkspace(t, "web", p.ID)
		team, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		if err != nil {
			t.Fatal(err)
		}
		e.c.authz = rules(t, map[string][]keel.Rule{
			"nothing": {{Path: "organizations/other", Capabilities: []keel.Capability{keel.CapRead}}},
			"org":     {{Path: "organizations/acme", Capabilities: []keel.Capability{keel.CapRead}}},
			"prj":     {{Path: "organizations/acme/projects/+", Capabilities: []keel.Capability{keel.CapRead}}},
		})
		nothing, org, prj := as("n", "nothing"), as("o", "org"), as("p", "org", "prj")
		before := storagetest.Dump(t, e.raw)
		cases := []struct {
			name              string
			hiddenID, missing string
			call              func(id string) error
		}{
			{"Organization", "acme", "nope", func(id string) error { _, err := e.c.GetOrganization(nothing, id); return err }},
			{"UpdateOrganization", "acme", "nope", func(id string) error {
				_, err := e.c.UpdateOrganization(nothing, id, OrganizationRequest{})
				return err
			}},
			{"DeleteOrganization", "acme", "nope", func(id string) error { return e.c.DeleteOrganization(org, id) }},
			{"List", "acme", "nope", func(id string) error { _, err := e.c.List(org, id, ListRequest{}); return err }},
			{"ListTeams", "acme", "nope", func(id string) error { _, err := e.c.ListTeams(org, id, ListTeamsRequest{}); return err }},
			{"ListWorkspaces", "acme", "nope", func(id string) error {
				_, err := e.c.ListWorkspaces(nothing, id, ListWorkspacesRequest{})
				return err
			}},
			{"Create", "acme", "nope", func(id string) error {
				_, err := e.c.Create(nothing, id, ProjectRequest{Name: ptr("newprj")})
				return err
			}},
			{"CreateTeam", "acme", "nope", func(id string) error { _, err := e.c.CreateTeam(nothing, id, TeamRequest{Name: new("x")}); return err }},
			{"Get", p.ID, "prj-nope", func(id string) error { _, err := e.c.Get(org, id); return err }},
			{"Update", p.ID, "prj-nope", func(id string) error { _, err := e.c.Update(org, id, ProjectRequest{}); return err }},
			{"Delete", p.ID, "prj-nope", func(id string) error { return e.c.Delete(org, id) }},
			{"Workspaces", p.ID, "prj-nope", func(id string) error { _, err := projectWorkspaces(e.c, org, id); return err }},
			{"TeamAccesses", p.ID, "prj-nope", func(id string) error { _, err := teamAccesses(e.c, org, id); return err }},
			{"MoveWorkspaces", p.ID, "prj-nope", func(id string) error { return e.c.MoveWorkspaces(prj, id, nil) }},
			{"Team", team.ID, "team-nope", func(id string) error { _, err := e.c.GetTeam(org, id); return err }},
			{"UpdateTeam", team.ID, "team-nope", func(id string) error { _, err := e.c.UpdateTeam(org, id, TeamRequest{}); return err }},
			{"DeleteTeam", team.ID, "team-nope", func(id string) error { return e.c.DeleteTeam(org, id) }},
			{"Workspace", w.ID, "ws-nope", func(id string) error { _, err := e.c.GetWorkspace(prj, id); return err }},
			{"UpdateWorkspace", w.ID, "ws-nope", func(id string) error {
				_, err := e.c.UpdateWorkspace(prj, id, WorkspaceRequest{})
				return err
			}},
			{"DeleteWorkspace", w.ID, "ws-nope", func(id string) error { return e.c.DeleteWorkspace(prj, id) }},
			{"WorkspaceByName", "web", "nope", func(name string) error { _, err := e.c.GetWorkspaceByName(prj, "acme", name); return err }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				errHidden, errMissing := tc.call(tc.hiddenID), tc.call(tc.missing)
				if !errors.Is(errHidden, keel.KindNotFound) {
					t.Fatalf("hidden: %v, want not found", errHidden)
				}
				sameAnswer(t, errHidden, tc.hiddenID, errMissing, tc.missing)
				if strings.Contains(errHidden.Error(), w.ID) && tc.hiddenID != w.ID {
					t.Fatalf("the answer names the hidden workspace's id: %v", errHidden)
				}
			})
		}
		if after := storagetest.Dump(t, e.raw); !maps.Equal(after, before) {
			t.Fatal("a refused call changed the store")
		}
	})
}
