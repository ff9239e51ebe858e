package project

import (
	"errors"
	"maps"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// TestFailedWritesLeaveStoreUnchanged makes the commit of each write fail
// and checks that the store is as it was.
func TestFailedWritesLeaveStoreUnchanged(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		var fs *faultstore.Store
		e := newEnv(t, open, nil, func(s storage.Store) storage.Store { fs = faultstore.New(s); return fs })
		src, dst := e.mkProject(t, "source"), e.mkProject(t, "target")
		w := e.mkWorkspace(t, "a", src.ID)
		team, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		if err != nil {
			t.Fatal(err)
		}
		boom := errors.New("disk full")
		tests := []struct {
			name string
			op   func() error
		}{
			{"create organization", func() error {
				_, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("beta"), Email: new("")})
				return err
			}},
			{"create project", func() error { _, err := e.c.Create(root(), "acme", ProjectRequest{Name: ptr("new")}); return err }},
			{"update project", func() error { _, err := e.c.Update(root(), src.ID, ProjectRequest{Name: ptr("renamed")}); return err }},
			{"delete project", func() error { return e.c.Delete(root(), dst.ID) }},
			{"move workspaces", func() error { return e.c.MoveWorkspaces(root(), dst.ID, []string{w.ID}) }},
			{"create workspace", func() error {
				_, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new("b")})
				return err
			}},
			{"delete workspace", func() error { return e.c.DeleteWorkspace(root(), w.ID) }},
			{"set team access", func() error {
				_, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: src.ID, TeamID: team.ID, Access: "read"})
				return err
			}},
			{"delete organization", func() error { return e.c.DeleteOrganization(root(), "acme") }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before := storagetest.Dump(t, e.raw)
				fs.Fail(faultstore.OpCommit, "", 1, boom)
				if err := tt.op(); !errors.Is(err, boom) {
					t.Fatalf("err = %v, want %v", err, boom)
				}
				if !maps.Equal(before, storagetest.Dump(t, e.raw)) {
					t.Fatal("the failed write changed the store")
				}
			})
		}
	})
}

// TestWritesAreRetrySafe runs every write twice under Rerun: the result
// must be that of one run.
func TestWritesAreRetrySafe(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		var fs *faultstore.Store
		e := newEnv(t, open, nil, func(s storage.Store) storage.Store { fs = faultstore.New(s); return fs })
		fs.Rerun(true)
		src, dst := e.mkProject(t, "source"), e.mkProject(t, "target")
		w := e.mkWorkspace(t, "a", src.ID)
		if err := e.c.MoveWorkspaces(root(), dst.ID, []string{w.ID}); err != nil {
			t.Fatal(err)
		}
		team, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: dst.ID, TeamID: team.ID, Access: "read"}); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name      string
			id        string
			workspace int
			teams     int
		}{
			{"source", src.ID, 0, 0},
			{"target", dst.ID, 1, 1},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p, err := e.c.Get(root(), tt.id)
				if err != nil || p.WorkspaceCount != tt.workspace || p.TeamCount != tt.teams {
					t.Fatalf("project = %+v, %v", p, err)
				}
			})
		}
		page, err := e.c.List(root(), "acme", ListRequest{})
		if err != nil || page.Total != 3 || len(page.Items) != 3 {
			t.Fatalf("list = %+v, %v", page, err)
		}
		if err := e.c.Delete(root(), src.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.Get(root(), src.ID); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("deleted project: %v", err)
		}
	})
}
