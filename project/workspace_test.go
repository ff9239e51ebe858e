package project

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/storagetest"
)

// TestWorkspaceSettingsDefaults: settings never sent read as HCP
// Terraform's defaults; settings sent on create are kept.
func TestWorkspaceSettingsDefaults(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		w := e.mkWorkspace(t, "plain", "")
		s := w.Settings
		if !*s.AllowDestroyPlan || !*s.FileTriggersEnabled || !*s.SpeculativeEnabled || !*s.StructuredRunOutputEnabled ||
			*s.QueueAllRuns || *s.AutoApply || *s.ExecutionMode != executionRemote || len(*s.TriggerPrefixes) != 0 || *s.Description != "" {
			t.Fatalf("defaults %+v", s)
		}
		w, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("set"), WorkspaceSettings: WorkspaceSettings{
			AllowDestroyPlan: ptr(false), QueueAllRuns: ptr(true), SpeculativeEnabled: ptr(false), Description: ptr("d"),
			TriggerPrefixes: &[]string{"modules/"}, ExecutionMode: ptr(executionLocal),
		}})

		if err != nil {
			t.Fatal(err)
		}
		read, err := e.c.GetWorkspace(root(), w.ID)
		if err != nil {
			t.Fatal(err)
		}
		s = read.Settings
		if *s.AllowDestroyPlan || !*s.QueueAllRuns || *s.SpeculativeEnabled || *s.Description != "d" ||
			!slices.Equal(*s.TriggerPrefixes, []string{"modules/"}) || *s.ExecutionMode != executionLocal || !*s.FileTriggersEnabled {
			t.Fatalf("read %+v", s)
		}
	})
}

// TestWorkspaceRulesNameGoFields: the rules of workspace settings, all at
// once on their Go names, and nothing is created.
func TestWorkspaceRulesNameGoFields(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		_, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("a.b"), WorkspaceSettings: WorkspaceSettings{
			ExecutionMode: ptr("agent"), TriggerPrefixes: &[]string{"a"}, TriggerPatterns: &[]string{"b/**"},
		}})

		if want := []string{"Name", "ExecutionMode", "TriggerPatterns"}; !slices.Equal(fields(err), want) {
			t.Fatalf("err %v, fields %q", err, fields(err))
		}
		w := e.mkWorkspace(t, "web", "")
		_, err = e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{Name: ptr("x y"), WorkspaceSettings: WorkspaceSettings{ExecutionMode: ptr("agent"), QueueAllRuns: ptr(true)}})
		if want := []string{"Name", "ExecutionMode"}; !slices.Equal(fields(err), want) {
			t.Fatalf("update err %v, fields %q", err, fields(err))
		}
		if r, _ := e.c.GetWorkspace(root(), w.ID); r.Name != "web" || *r.Settings.QueueAllRuns {
			t.Fatalf("a refused update changed %+v", r)
		}
	})
}

// TestWorkspaceRename: a new name renames (the old name is free, the new
// one finds the workspace), a taken name is refused, a change of case is
// a rename.
func TestWorkspaceRename(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		w := e.mkWorkspace(t, "web", "")
		e.mkWorkspace(t, "db", "")
		e.clock.Advance(1e9)
		got, err := e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{Name: ptr("frontend"), WorkspaceSettings: WorkspaceSettings{AutoApply: ptr(true)}})
		if err != nil || got.Name != "frontend" || !*got.Settings.AutoApply || !got.UpdatedAt.Equal(t0.Add(1e9)) {
			t.Fatalf("renamed %+v, %v", got, err)
		}
		if byName, err := e.c.GetWorkspaceByName(root(), "acme", "FRONTEND"); err != nil || byName.ID != w.ID {
			t.Fatalf("by new name: %+v, %v", byName, err)
		}
		if _, err := e.c.GetWorkspaceByName(root(), "acme", "web"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("old name still found: %v", err)
		}
		if _, err := e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{Name: ptr("DB")}); !errors.Is(err, keel.KindAlreadyExists) {
			t.Fatalf("taken name: %v", err)
		}
		if got, err := e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{Name: ptr("Frontend")}); err != nil || got.Name != "Frontend" {
			t.Fatalf("case change: %+v, %v", got, err)
		}
		e.mkWorkspace(t, "web", "") // the old name is free
	})
}

// TestWorkspaceUpdateMoves: ProjectID moves the workspace with the counts
// and the rules of a move; an unknown project is invalid on ProjectID.
func TestWorkspaceUpdateMoves(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := rules(t, map[string][]keel.Rule{
			"dev": {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead, keel.CapUpdate}}},
		})
		e := newEnv(t, open, authz, nil)
		p := e.mkProject(t, "apps")
		w := e.mkWorkspace(t, "web", "")
		if _, err := e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{ProjectID: ptr("prj-nope")}); !slices.Equal(fields(err), []string{"ProjectID"}) {
			t.Fatalf("unknown project: %v", err)
		}
		if _, err := e.c.UpdateWorkspace(as("d", "dev"), w.ID, WorkspaceRequest{ProjectID: &p.ID}); !errors.Is(err, keel.KindForbidden) {
			t.Fatalf("move without move-workspaces: %v", err)
		}
		got, err := e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{ProjectID: &p.ID})
		if err != nil || got.ProjectID != p.ID {
			t.Fatalf("moved %+v, %v", got, err)
		}
		if p, _ := e.c.Get(root(), p.ID); p.WorkspaceCount != 1 {
			t.Fatalf("destination count %d", p.WorkspaceCount)
		}
		if d, _ := e.c.Get(root(), e.org.DefaultProjectID); d.WorkspaceCount != 0 {
			t.Fatalf("source count %d", d.WorkspaceCount)
		}
	})
}

// TestWorkspacePermissionsAndHiding: the permissions follow the caller's
// rights; a caller without read on a workspace gets not found on every
// operation, and lists hold only what the caller may read.
func TestWorkspacePermissionsAndHiding(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := rules(t, map[string][]keel.Rule{
			"reader": {{Path: "organizations/acme", Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/projects/*", Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/workspaces/+", Capabilities: []keel.Capability{keel.CapRead}}},
		})
		e := newEnv(t, open, authz, nil)
		w := e.mkWorkspace(t, "web", "")
		if got, _ := e.c.GetWorkspace(root(), w.ID); got.Permissions != (WorkspacePermissions{CanUpdate: true, CanDestroy: true, CanForceDelete: true}) {
			t.Fatalf("root permissions %+v", got.Permissions)
		}
		reader := as("r", "reader")
		if got, err := e.c.GetWorkspace(reader, w.ID); err != nil || got.Permissions != (WorkspacePermissions{}) {
			t.Fatalf("reader: %+v, %v", got.Permissions, err)
		}
		if err := e.c.DeleteWorkspace(reader, w.ID); !errors.Is(err, keel.KindForbidden) {
			t.Fatalf("reader delete: %v", err)
		}
		nobody := as("n")
		if _, err := e.c.UpdateWorkspace(nobody, w.ID, WorkspaceRequest{Name: ptr("x y")}); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("update by a caller who cannot read: %v", err)
		}
		if _, err := e.c.CreateWorkspace(nobody, "acme", WorkspaceRequest{Name: new("new")}); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("create in an organization the caller cannot read: %v", err)
		}
		if _, err := e.c.ListWorkspaces(nobody, "acme", ListWorkspacesRequest{}); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("list of an organization the caller cannot read: %v", err)
		}
		other := e.mkWorkspace(t, "db", "")
		e.c.authz = rules(t, map[string][]keel.Rule{
			"one": {{Path: "organizations/acme", Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/projects/*", Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/workspaces/" + w.ID, Capabilities: []keel.Capability{keel.CapRead}}},
		})
		one := as("o", "one")
		page, err := e.c.ListWorkspaces(one, "acme", ListWorkspacesRequest{})
		if err != nil || len(page.Items) != 1 || page.Items[0].ID != w.ID || page.Matching != 1 {
			t.Fatalf("list of a caller who reads one workspace: %+v, %v", page, err)
		}
		if list, err := projectWorkspaces(e.c, one, e.org.DefaultProjectID); err != nil || len(list) != 1 || list[0].ID != w.ID {
			t.Fatalf("project's workspaces: %+v, %v", list, err)
		}
		if _, err := e.c.GetWorkspace(one, other.ID); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("a workspace the caller cannot read: %v", err)
		}
	})
}

// TestListWorkspacesPages: pages in name order, search, wildcard-name and
// project filters, a page past the end empty, a walk by cursor, a
// negative offset refused on Offset.
func TestListWorkspacesPages(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		p := e.mkProject(t, "apps")
		for _, n := range []string{"net-b", "db", "net-a", "web"} {
			e.mkWorkspace(t, n, "")
		}
		e.mkWorkspace(t, "net-c", p.ID)
		tests := []struct {
			name  string
			opts  ListWorkspacesRequest
			want  []string
			total int
			next  bool
		}{
			{"all", ListWorkspacesRequest{}, []string{"db", "net-a", "net-b", "net-c", "web"}, 5, false},
			{"page 2", ListWorkspacesRequest{ListRequest: keel.ListRequest{Limit: 2}, Offset: 2}, []string{"net-b", "net-c"}, 5, true},
			{"search", ListWorkspacesRequest{Search: "NET"}, []string{"net-a", "net-b", "net-c"}, 3, false},
			{"project", ListWorkspacesRequest{ProjectID: p.ID}, []string{"net-c"}, 1, false},
			{"wildcard suffix", ListWorkspacesRequest{WildcardName: "*-A"}, []string{"net-a"}, 1, false},
			{"wildcard prefix", ListWorkspacesRequest{WildcardName: "NET-*"}, []string{"net-a", "net-b", "net-c"}, 3, false},
			{"wildcard both", ListWorkspacesRequest{WildcardName: "*e*"}, []string{"net-a", "net-b", "net-c", "web"}, 4, false},
			{"wildcard inside", ListWorkspacesRequest{WildcardName: "n*-b"}, []string{"net-b"}, 1, false},
			{"wildcard no match", ListWorkspacesRequest{WildcardName: "*-dev"}, nil, 0, false},
			{"wildcard whole name", ListWorkspacesRequest{WildcardName: "DB"}, []string{"db"}, 1, false},
			{"wildcard and search", ListWorkspacesRequest{WildcardName: "net-*", Search: "c"}, []string{"net-c"}, 1, false},
			{"past the end", ListWorkspacesRequest{ListRequest: keel.ListRequest{Limit: 2}, Offset: 16}, nil, 5, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				page, err := e.c.ListWorkspaces(root(), "acme", tt.opts)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, w := range page.Items {
					names = append(names, w.Name)
				}
				if !slices.Equal(names, tt.want) || page.Matching != tt.total || (page.Next != "") != tt.next || page.Total != 5 {
					t.Fatalf("names %q page %+v", names, page)
				}
			})
		}
		var walked []string
		for w, err := range keel.All(root(), 2, func(ctx context.Context, r keel.ListRequest) (keel.Page[Workspace], error) {
			page, err := e.c.ListWorkspaces(ctx, "acme", ListWorkspacesRequest{ListRequest: r, Search: "net"})
			return page.Page, err
		}) {
			if err != nil {
				t.Fatal(err)
			}
			walked = append(walked, w.Name)
		}
		if !slices.Equal(walked, []string{"net-a", "net-b", "net-c"}) {
			t.Fatalf("walked %q", walked)
		}
		_, err := e.c.ListWorkspaces(root(), "acme", ListWorkspacesRequest{Offset: -1})
		if !slices.Equal(fields(err), []string{"Offset"}) {
			t.Fatalf("negative offset: %v", err)
		}
		if _, err := e.c.List(root(), "acme", ListRequest{Offset: -1}); !slices.Equal(fields(err), []string{"Offset"}) {
			t.Fatalf("negative offset of projects: %v", err)
		}
	})
}

// TestWorkspaceExecutionModeFollowsOrganization: a workspace without an
// execution mode of its own follows its organization's default, now and
// after it changes, and says so in SettingOverwrites; a mode sent
// (ExecutionMode or Operations) becomes its own; SettingOverwrites false
// drops it; Operations reads as the mode in force.
func TestWorkspaceExecutionModeFollowsOrganization(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		if _, err := e.c.UpdateOrganization(root(), "acme", OrganizationRequest{OrganizationSettings: OrganizationSettings{DefaultExecutionMode: ptr(executionLocal)}}); err != nil {
			t.Fatal(err)
		}
		mode := func(w Workspace) (string, bool, bool) {
			s := w.Settings
			return *s.ExecutionMode, *s.Operations, *s.SettingOverwrites.ExecutionMode
		}
		check := func(what string, w Workspace, err error, wantMode string, wantOwn bool) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			read, err := e.c.GetWorkspace(root(), w.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range []Workspace{w, read} {
				if m, ops, own := mode(x); m != wantMode || ops != (wantMode != executionLocal) || own != wantOwn {
					t.Fatalf("%s: mode %s, operations %v, own %v; want %s, own %v", what, m, ops, own, wantMode, wantOwn)
				}
			}
		}
		w, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("follows"), WorkspaceSettings: WorkspaceSettings{SettingOverwrites: &SettingOverwrites{ExecutionMode: ptr(false)}}})
		check("created following", w, err, executionLocal, false)
		plain := e.mkWorkspace(t, "plain", "")
		check("created without settings", plain, nil, executionLocal, false)
		if _, err := e.c.UpdateOrganization(root(), "acme", OrganizationRequest{OrganizationSettings: OrganizationSettings{DefaultExecutionMode: ptr(executionRemote)}}); err != nil {
			t.Fatal(err)
		}
		w, err = e.c.GetWorkspace(root(), w.ID)
		check("after the organization's change", w, err, executionRemote, false)
		w, err = e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{WorkspaceSettings: WorkspaceSettings{Operations: ptr(false)}})
		check("operations false", w, err, executionLocal, true)
		w, err = e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{WorkspaceSettings: WorkspaceSettings{Operations: ptr(true)}})
		check("operations true", w, err, executionRemote, true)
		w, err = e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{WorkspaceSettings: WorkspaceSettings{ExecutionMode: ptr(executionLocal), Operations: ptr(false),
			SettingOverwrites: &SettingOverwrites{ExecutionMode: ptr(true)}}})
		check("execution mode and operations that agree", w, err, executionLocal, true)
		w, err = e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{WorkspaceSettings: WorkspaceSettings{SettingOverwrites: &SettingOverwrites{ExecutionMode: ptr(true)}}})
		check("overwrite true, its own mode kept", w, err, executionLocal, true)
		w, err = e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{WorkspaceSettings: WorkspaceSettings{SettingOverwrites: &SettingOverwrites{ExecutionMode: ptr(false)}}})
		check("overwrite false", w, err, executionRemote, false)
		w, err = e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("own"), WorkspaceSettings: WorkspaceSettings{Operations: ptr(false), SettingOverwrites: &SettingOverwrites{ExecutionMode: ptr(true)}}})
		check("created with operations", w, err, executionLocal, true)
	})
}

// TestWorkspaceExecutionModeRules: operations that contradict the
// execution mode, an overwrite false with a mode sent, and an overwrite
// true without a mode are refused on their Go paths, and a refused update
// changes nothing.
func TestWorkspaceExecutionModeRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		_, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("a"), WorkspaceSettings: WorkspaceSettings{ExecutionMode: ptr(executionRemote), Operations: ptr(false)}})
		if !slices.Equal(fields(err), []string{"Operations"}) {
			t.Fatalf("contradiction: %v", err)
		}
		_, err = e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("b"), WorkspaceSettings: WorkspaceSettings{ExecutionMode: ptr(executionLocal), SettingOverwrites: &SettingOverwrites{ExecutionMode: ptr(false)}}})
		if !slices.Equal(fields(err), []string{"SettingOverwrites.ExecutionMode"}) {
			t.Fatalf("overwrite false with a mode: %v", err)
		}
		_, err = e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("c"), WorkspaceSettings: WorkspaceSettings{SettingOverwrites: &SettingOverwrites{ExecutionMode: ptr(true)}}})
		if !slices.Equal(fields(err), []string{"SettingOverwrites.ExecutionMode"}) {
			t.Fatalf("overwrite true without a mode: %v", err)
		}
		if page, _ := e.c.ListWorkspaces(root(), "acme", ListWorkspacesRequest{}); len(page.Items) != 0 {
			t.Fatalf("refused creates created %+v", page.Items)
		}
		w := e.mkWorkspace(t, "web", "")
		before := storagetest.Dump(t, e.raw)
		_, err = e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{WorkspaceSettings: WorkspaceSettings{AutoApply: ptr(true), SettingOverwrites: &SettingOverwrites{ExecutionMode: ptr(true)}}})
		if !slices.Equal(fields(err), []string{"SettingOverwrites.ExecutionMode"}) {
			t.Fatalf("update: overwrite true without a mode: %v", err)
		}
		if !maps.Equal(before, storagetest.Dump(t, e.raw)) {
			t.Fatal("a refused update changed the store")
		}
	})
}

// TestWorkspaceAutoDestroyAt: kept on create (in UTC) and update, cleared
// by a zero time, nil when never set.
func TestWorkspaceAutoDestroyAt(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		if w := e.mkWorkspace(t, "plain", ""); w.Settings.AutoDestroyAt != nil {
			t.Fatalf("never set: %v", *w.Settings.AutoDestroyAt)
		}
		at := time.Date(2027, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
		w, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("temp"), WorkspaceSettings: WorkspaceSettings{AutoDestroyAt: &at}})
		if err != nil {
			t.Fatal(err)
		}
		read, _ := e.c.GetWorkspace(root(), w.ID)
		for _, x := range []Workspace{w, read} {
			if got := x.Settings.AutoDestroyAt; got == nil || !got.Equal(at) || got.Location() != time.UTC {
				t.Fatalf("created: %v", got)
			}
		}
		later := at.Add(time.Hour)
		if w, err = e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{WorkspaceSettings: WorkspaceSettings{AutoDestroyAt: &later}}); err != nil || !w.Settings.AutoDestroyAt.Equal(later) {
			t.Fatalf("updated: %+v, %v", w.Settings.AutoDestroyAt, err)
		}
		if w, err = e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{WorkspaceSettings: WorkspaceSettings{AutoApply: ptr(true)}}); err != nil || !w.Settings.AutoDestroyAt.Equal(later) {
			t.Fatalf("kept by an update that does not send it: %+v, %v", w.Settings.AutoDestroyAt, err)
		}
		if w, err = e.c.UpdateWorkspace(root(), w.ID, WorkspaceRequest{WorkspaceSettings: WorkspaceSettings{AutoDestroyAt: &time.Time{}}}); err != nil || w.Settings.AutoDestroyAt != nil {
			t.Fatalf("cleared: %+v, %v", w.Settings.AutoDestroyAt, err)
		}
		if read, _ := e.c.GetWorkspace(root(), w.ID); read.Settings.AutoDestroyAt != nil {
			t.Fatalf("read after clearing: %v", *read.Settings.AutoDestroyAt)
		}
	})
}
