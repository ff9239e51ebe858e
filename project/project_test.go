package project

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/randid"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestOrganizationHasDefaultProject(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p, err := e.c.Get(root(), e.org.DefaultProjectID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != defaultProjectName || !strings.HasPrefix(p.ID, "prj-") || p.Description != nil {
			t.Fatalf("default project = %+v", p)
		}
		if !e.org.CreatedAt.Equal(t0) {
			t.Fatalf("created at %v, want %v", e.org.CreatedAt, t0)
		}
	})
}

func TestCreateOrganizationRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		tests := []struct {
			name    string
			org     string
			wantErr error
		}{
			{"valid", "beta-co_2", nil},
			{"taken", "acme", keel.KindAlreadyExists},
			{"empty", "", keel.KindInvalid},
			{"slash", "a/b", keel.KindInvalid},
			{"space", "a b", keel.KindInvalid},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new(tt.org), Email: new("")})
				if !errors.Is(err, tt.wantErr) && (err != nil || tt.wantErr != nil) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			})
		}
		orgs, err := allOrganizations(e.c, root())
		if err != nil || len(orgs) != 2 || orgs[0].Name != "acme" || orgs[1].Name != "beta-co_2" {
			t.Fatalf("organizations = %+v, %v", orgs, err)
		}
	})
}

// fields returns the fields of err's problems, in order.
func fields(err error) []string {
	var out []string
	for _, fe := range keel.FieldErrors(err) {
		out = append(out, fe.Field)
	}
	return out
}

func TestCatalogRulesNameGoFields(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "infra")
		team, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		if err != nil {
			t.Fatal(err)
		}
		other, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("other"), Email: new("")})
		if err != nil {
			t.Fatal(err)
		}
		foreign, err := e.c.CreateTeam(root(), "other", TeamRequest{Name: new("devs")})
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name   string
			call   func() error
			fields []string
			rule   string
		}{
			{"organization name required", func() error {
				_, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new(""), Email: new("")})
				return err
			}, []string{"Name"}, "is required"},
			{"organization name", func() error {
				_, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("a b"), Email: new("")})
				return err
			}, []string{"Name"}, "must be letters, numbers, - and _"},
			{"team name required", func() error { _, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("")}); return err }, []string{"Name"}, "is required"},
			{"team name", func() error { _, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("a.b")}); return err }, []string{"Name"}, "must be letters, numbers, - and _"},
			{"workspace name required", func() error {
				_, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("")})
				return err
			}, []string{"Name"}, "is required"},
			{"workspace name 91", func() error {
				_, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new(strings.Repeat("w", 91))})
				return err
			}, []string{"Name"}, "must be at most 90 characters"},
			{"workspace in unknown project", func() error {
				_, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("w"), ProjectID: new("prj-nope")})
				return err
			}, []string{"ProjectID"}, ""},
			{"workspace in another organization's project", func() error {
				_, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("w"), ProjectID: new(other.DefaultProjectID)})
				return err
			}, []string{"ProjectID"}, ""},
			{"access without project, team and level", func() error {
				_, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: "", TeamID: "", Access: "owner"})
				return err
			}, []string{"ProjectID", "TeamID", "Access"}, ""},
			{"access level", func() error {
				_, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "owner"})
				return err
			}, []string{"Access"}, "must be one of read, write, maintain, admin, custom"},
			{"unknown team", func() error {
				_, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: "team-nope", Access: "read"})
				return err
			}, []string{"TeamID"}, ""},
			{"team of another organization", func() error {
				_, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: foreign.ID, Access: "read"})
				return err
			}, []string{"TeamID"}, ""},
			{"sort", func() error { _, err := e.c.List(root(), "acme", ListRequest{Sort: "id"}); return err }, []string{"Sort"}, "must be name or -name"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.call()
				if !errors.Is(err, keel.KindInvalid) || !slices.Equal(fields(err), tt.fields) {
					t.Fatalf("err = %v, fields %v, want %v", err, fields(err), tt.fields)
				}
				if fe := keel.FieldErrors(err); tt.rule != "" && fe[0].Rule != tt.rule {
					t.Fatalf("rule %q, want %q", fe[0].Rule, tt.rule)
				}
			})
		}
		if got, _ := e.c.Get(root(), p.ID); got.TeamCount != 0 || got.WorkspaceCount != 0 {
			t.Fatalf("a refused request changed the counts: %+v", got)
		}
	})
}

func TestDeleteOrganizationRemovesEverything(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "infra")
		e.mkWorkspace(t, "net", p.ID)
		team, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "write"}); err != nil {
			t.Fatal(err)
		}
		if err := e.c.DeleteOrganization(root(), "acme"); err != nil {
			t.Fatal(err)
		}
		if left := storagetest.Dump(t, e.raw); len(left) != 0 {
			t.Fatalf("keys left: %v", left)
		}
		if _, err := e.c.GetOrganization(root(), "acme"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("read deleted organization: %v", err)
		}
	})
}

func TestProjectNameRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		tests := []struct {
			name  string
			input string
			ok    bool
		}{
			{"three characters", "abc", true},
			{"thirty-six characters", strings.Repeat("a", 36), true},
			{"inner space dash underscore", "my project-1_x", true},
			{"two characters", "ab", false},
			{"thirty-seven characters", strings.Repeat("a", 37), false},
			{"leading space", " abc", false},
			{"trailing space", "abc ", false},
			{"dot", "a.bc", false},
			{"slash", "a/bc", false},
			{"non-ASCII letter", "äbc", false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := e.c.Create(root(), "acme", ProjectRequest{Name: ptr(tt.input)})
				if tt.ok != (err == nil) {
					t.Fatalf("create %q: %v", tt.input, err)
				}
				if !tt.ok {
					fe := keel.FieldErrors(err)
					if len(fe) != 1 || fe[0].Field != "Name" {
						t.Fatalf("field errors = %v", fe)
					}
				}
			})
		}
	})
}

func TestProjectCreateRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		e.mkProject(t, "infra")
		tests := []struct {
			name    string
			org     string
			in      ProjectRequest
			wantErr error
			fields  []string
		}{
			{"name required", "acme", ProjectRequest{}, keel.KindInvalid, []string{"Name"}},
			{"description 257", "acme", ProjectRequest{Name: ptr("abc"), Description: ptr(strings.Repeat("d", 257))}, keel.KindInvalid, []string{"Description"}},
			{"every problem at once", "acme", ProjectRequest{Name: ptr("x"), Description: ptr(strings.Repeat("d", 257))}, keel.KindInvalid, []string{"Name", "Description"}},
			{"name taken ignoring case", "acme", ProjectRequest{Name: ptr("INFRA")}, keel.KindAlreadyExists, nil},
			{"unknown organization", "nope", ProjectRequest{Name: ptr("abc")}, keel.KindNotFound, nil},
			{"description 256", "acme", ProjectRequest{Name: ptr("docs"), Description: ptr(strings.Repeat("d", 256))}, nil, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := e.c.Create(root(), tt.org, tt.in)
				if tt.wantErr == nil {
					if err != nil {
						t.Fatal(err)
					}
					return
				}
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if got := fields(err); !slices.Equal(got, tt.fields) {
					t.Fatalf("fields = %v, want %v", got, tt.fields)
				}
			})
		}
	})
}

func TestProjectDescriptionNullUntilSet(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "infra")
		if p.Description != nil {
			t.Fatalf("description = %q, want nil", *p.Description)
		}
		p, err := e.c.Update(root(), p.ID, ProjectRequest{Description: ptr("")})
		if err != nil || p.Description == nil || *p.Description != "" {
			t.Fatalf("after update: %+v, %v", p, err)
		}
	})
}

func TestProjectUpdateKeepsFieldsNotSent(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p, err := e.c.Create(root(), "acme", ProjectRequest{Name: ptr("infra"), Description: ptr("d")})
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name     string
			in       ProjectRequest
			wantName string
			wantDesc string
		}{
			{"nothing sent", ProjectRequest{}, "infra", "d"},
			{"rename", ProjectRequest{Name: ptr("platform")}, "platform", "d"},
			{"change case", ProjectRequest{Name: ptr("Platform")}, "Platform", "d"},
			{"description", ProjectRequest{Description: ptr("e")}, "Platform", "e"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := e.c.Update(root(), p.ID, tt.in)
				if err != nil {
					t.Fatal(err)
				}
				if got.Name != tt.wantName || *got.Description != tt.wantDesc {
					t.Fatalf("got %q %q", got.Name, *got.Description)
				}
			})
		}
		// The old name is free again; the new one is taken.
		e.mkProject(t, "infra")
		if _, err := e.c.Create(root(), "acme", ProjectRequest{Name: ptr("platform")}); !errors.Is(err, keel.KindAlreadyExists) {
			t.Fatalf("create with renamed name: %v", err)
		}
	})
}

func TestProjectUpdateUnknownIsNotFound(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		if _, err := e.c.Update(root(), "prj-nope", ProjectRequest{}); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("err = %v", err)
		}
		if _, err := e.c.Get(root(), "a/b"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestProjectCounts(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "infra")
		e.mkWorkspace(t, "a", p.ID)
		w := e.mkWorkspace(t, "b", p.ID)
		team, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // setting access twice counts the team once
			if _, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "admin"}); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := e.c.Get(root(), p.ID)
		if got.WorkspaceCount != 2 || got.TeamCount != 1 {
			t.Fatalf("counts = %d %d", got.WorkspaceCount, got.TeamCount)
		}
		if err := e.c.DeleteWorkspace(root(), w.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.c.DeleteTeamAccess(root(), p.ID, team.ID); err != nil {
			t.Fatal(err)
		}
		got, _ = e.c.Get(root(), p.ID)
		if got.WorkspaceCount != 1 || got.TeamCount != 0 {
			t.Fatalf("counts after removal = %d %d", got.WorkspaceCount, got.TeamCount)
		}
		if _, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: p.ID, TeamID: team.ID, Access: "owner"}); !errors.Is(err, keel.KindInvalid) {
			t.Fatalf("bad access level: %v", err)
		}
	})
}

func TestProjectDeleteRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := rules(t, map[string][]keel.Rule{
			"reader":  {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead}}},
			"deleter": {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead, keel.CapForceDelete}}},
		})
		e := newEnv(t, open, authz, nil)
		full := e.mkProject(t, "full")
		e.mkWorkspace(t, "w1", full.ID)
		empty := e.mkProject(t, "empty")
		tests := []struct {
			name    string
			policy  string
			id      string
			wantErr error
		}{
			{"unknown", "", "prj-nope", keel.KindNotFound},
			{"no read right", "", empty.ID, keel.KindNotFound},
			{"no force-delete right", "reader", empty.ID, keel.KindForbidden},
			{"contains workspaces", "deleter", full.ID, keel.KindConflict},
			{"default project", "deleter", e.org.DefaultProjectID, keel.KindConflict},
			{"empty", "deleter", empty.ID, nil},
			{"already deleted", "deleter", empty.ID, keel.KindNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := e.c.Delete(as("u", tt.policy), tt.id)
				if !errors.Is(err, tt.wantErr) && (err != nil || tt.wantErr != nil) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			})
		}
	})
}

func TestProjectRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := rules(t, map[string][]keel.Rule{
			"reader":  {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead, keel.CapList}}},
			"manager": {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead, keel.CapManageProjects, keel.CapUpdate}}},
		})
		e := newEnv(t, open, authz, nil)
		p := e.mkProject(t, "infra")
		tests := []struct {
			name    string
			policy  string
			op      func(ctxPolicy string) error
			wantErr error
		}{
			{"create without manage-projects", "reader", func(pol string) error {
				_, err := e.c.Create(as("u", pol), "acme", ProjectRequest{Name: ptr("abc")})
				return err
			}, keel.KindForbidden},
			{"create in an unreadable organization", "", func(pol string) error {
				_, err := e.c.Create(as("u"), "acme", ProjectRequest{Name: ptr("abc")})
				return err
			}, keel.KindNotFound},
			{"create with manage-projects", "manager", func(pol string) error {
				_, err := e.c.Create(as("u", pol), "acme", ProjectRequest{Name: ptr("abc")})
				return err
			}, nil},
			{"update without update", "reader", func(pol string) error {
				_, err := e.c.Update(as("u", pol), p.ID, ProjectRequest{})
				return err
			}, keel.KindForbidden},
			{"show without read", "", func(string) error {
				_, err := e.c.Get(as("u"), p.ID)
				return err
			}, keel.KindNotFound},
			{"list without list", "manager", func(pol string) error {
				_, err := e.c.List(as("u", pol), "acme", ListRequest{})
				return err
			}, keel.KindNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.op(tt.policy)
				if !errors.Is(err, tt.wantErr) && (err != nil || tt.wantErr != nil) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			})
		}
	})
}

func TestProjectPermissionsForCaller(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := rules(t, map[string][]keel.Rule{
			"reader":  {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead}}},
			"updater": {{Path: "organizations/acme/projects/+", Capabilities: []keel.Capability{keel.CapRead, keel.CapUpdate}}},
			"all":     {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead, keel.CapUpdate, keel.CapForceDelete, keel.CapCreate}}},
		})
		e := newEnv(t, open, authz, nil)
		p := e.mkProject(t, "infra")
		tests := []struct {
			name   string
			policy string
			want   Permissions
		}{
			{"reader", "reader", Permissions{}},
			{"updater", "updater", Permissions{CanUpdate: true}},
			{"all", "all", Permissions{CanUpdate: true, CanDestroy: true, CanCreateWorkspace: true}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := e.c.Get(as("u", tt.policy), p.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Permissions != tt.want {
					t.Fatalf("permissions = %+v, want %+v", got.Permissions, tt.want)
				}
			})
		}
	})
}

// TestNewIDIsHCPForm: ids are HCP Terraform's form, prefix and 16 base58
// characters, which clients (the tfe provider's import) tell from names.
func TestNewIDIsHCPForm(t *testing.T) {
	form := regexp.MustCompile(`^team-[1-9A-HJ-NP-Za-km-z]{16}$`)
	seen := map[byte]bool{}
	for range 2000 {
		id := newID("team")
		if !form.MatchString(id) {
			t.Fatalf("id %q is not of HCP's form", id)
		}
		for i := 5; i < len(id); i++ {
			seen[id[i]] = true
		}
	}
	if len(seen) != len(randid.Base58) {
		t.Fatalf("%d of the %d characters drawn", len(seen), len(randid.Base58))
	}
}
