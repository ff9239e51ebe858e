package project

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage/etcdstore"
	"github.com/keelhq/keel/storage/storagetest"
)

func TestMoveWorkspaces(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		src, dst := e.mkProject(t, "source"), e.mkProject(t, "target")
		a, b := e.mkWorkspace(t, "a", src.ID), e.mkWorkspace(t, "b", src.ID)
		if err := e.c.MoveWorkspaces(root(), dst.ID, []string{a.ID, b.ID, a.ID}); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]int{src.ID: 0, dst.ID: 2} {
			p, _ := e.c.Get(root(), id)
			if p.WorkspaceCount != want {
				t.Fatalf("%s workspace-count = %d, want %d", p.Name, p.WorkspaceCount, want)
			}
		}
		ws, err := projectWorkspaces(e.c, root(), dst.ID)
		if err != nil || len(ws) != 2 || ws[0].ProjectID != dst.ID {
			t.Fatalf("workspaces of target = %+v, %v", ws, err)
		}
		// Moving into the project they are in changes nothing.
		if err := e.c.MoveWorkspaces(root(), dst.ID, []string{a.ID}); err != nil {
			t.Fatal(err)
		}
		if p, _ := e.c.Get(root(), dst.ID); p.WorkspaceCount != 2 {
			t.Fatalf("count after no-op move = %d", p.WorkspaceCount)
		}
	})
}

func TestMoveWorkspacesRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		authz := rules(t, map[string][]keel.Rule{
			"mover": {
				{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/projects/+", Capabilities: []keel.Capability{keel.CapMoveWorkspaces}},
			},
			"locked": {{Path: "organizations/acme/projects/*", Capabilities: []keel.Capability{keel.CapDeny}}},
		})
		e := newEnv(t, open, authz, nil)
		src, dst, locked := e.mkProject(t, "source"), e.mkProject(t, "target"), e.mkProject(t, "locked")
		a := e.mkWorkspace(t, "a", src.ID)
		l := e.mkWorkspace(t, "l", locked.ID)
		if _, err := e.c.CreateOrganization(root(), OrganizationRequest{Name: new("other"), Email: new("")}); err != nil {
			t.Fatal(err)
		}
		foreign, err := e.c.CreateWorkspace(root(), "other", WorkspaceRequest{Name: new("f")})
		if err != nil {
			t.Fatal(err)
		}
		lockedOut := rules(t, map[string][]keel.Rule{
			"mover": {
				{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead}},
				{Path: "organizations/acme/projects/+", Capabilities: []keel.Capability{keel.CapMoveWorkspaces}},
				{Path: "organizations/acme/projects/" + locked.ID, Capabilities: []keel.Capability{keel.CapDeny}},
			},
			"reader": {{Path: "organizations/acme*", Capabilities: []keel.Capability{keel.CapRead}}},
		})
		e.c.authz = lockedOut
		before := storagetest.Dump(t, e.raw)
		tests := []struct {
			name    string
			policy  string
			dest    string
			ids     []string
			wantErr error
			wantIDs []string // listed in the error
		}{
			{"unknown destination", "mover", "prj-nope", []string{a.ID}, keel.KindNotFound, nil},
			{"destination without move right", "reader", dst.ID, []string{a.ID}, keel.KindNotFound, nil},
			{"destination not visible", "", dst.ID, []string{a.ID}, keel.KindNotFound, nil},
			{"unknown workspace", "mover", dst.ID, []string{a.ID, "ws-nope"}, keel.KindForbidden, []string{"ws-nope"}},
			{"source without move right", "mover", dst.ID, []string{a.ID, l.ID}, keel.KindForbidden, []string{l.ID}},
			{"workspace of another organization", "mover", dst.ID, []string{foreign.ID}, keel.KindForbidden, []string{foreign.ID}},
			{"several refused", "mover", dst.ID, []string{"ws-x", l.ID, a.ID}, keel.KindForbidden, []string{"ws-x", l.ID}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := e.c.MoveWorkspaces(as("u", tt.policy), tt.dest, tt.ids)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				for _, id := range tt.wantIDs {
					if !strings.Contains(err.Error(), id) {
						t.Fatalf("error %q does not list %s", err, id)
					}
				}
				if strings.Contains(err.Error(), a.ID) {
					t.Fatalf("error %q lists the movable workspace", err)
				}
				if after := storagetest.Dump(t, e.raw); len(after) != len(before) {
					t.Fatal("a refused move changed the store")
				}
			})
		}
		if err := e.c.MoveWorkspaces(as("u", "mover"), dst.ID, []string{a.ID}); err != nil {
			t.Fatalf("allowed move: %v", err)
		}
	})
}

// TestMoveWorkspacesBeyondOneTransaction: a move is one transaction of
// three writes per workspace and one per project. On etcd (128 writes) 42
// workspaces of one project move; 43 are refused up front, naming the
// limit, and the store is as it was. The stores without limits move 43.
func TestMoveWorkspacesBeyondOneTransaction(t *testing.T) {
	if err := moveFits(etcdstore.DefaultLimits(), 42, 42, 2); err != nil {
		t.Fatalf("42 workspaces of one project on etcd's limits: %v", err)
	}
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		src, dst := e.mkProject(t, "source"), e.mkProject(t, "target")
		var ids []string
		for i := range 43 {
			ids = append(ids, e.mkWorkspace(t, fmt.Sprint("w", i), src.ID).ID)
		}
		if ops := e.raw.Limits().MaxTxOps; ops > 0 {
			before := storagetest.Dump(t, e.raw)
			err := e.c.MoveWorkspaces(root(), dst.ID, ids)
			if keel.KindOf(err) != keel.KindTooLarge {
				t.Fatalf("move 43 workspaces: %v, want too large", err)
			}
			for _, s := range []string{"moving 43 workspaces", "131 writes", fmt.Sprintf("at most %d", ops), "MaxTxOps", "fewer"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the refusal %q does not say %q", err, s)
				}
			}
			if !maps.Equal(before, storagetest.Dump(t, e.raw)) {
				t.Fatal("the refused move changed the store")
			}
			ids = ids[:42]
		}
		if err := e.c.MoveWorkspaces(root(), dst.ID, ids); err != nil {
			t.Fatalf("move %d workspaces: %v", len(ids), err)
		}
		for _, p := range []struct {
			id   string
			want int
		}{{src.ID, 43 - len(ids)}, {dst.ID, len(ids)}} {
			got, err := e.c.Get(root(), p.id)
			if err != nil || got.WorkspaceCount != p.want {
				t.Fatalf("project %s counts %d workspaces, %v; want %d", got.Name, got.WorkspaceCount, err, p.want)
			}
		}
	})
}
