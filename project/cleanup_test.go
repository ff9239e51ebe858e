package project

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
	"github.com/keelhq/keel/storage/storagetest"
)

// grant gives team access to project prj, or fails t.
func (e *env) grant(t testing.TB, prj, team string) {
	t.Helper()
	if _, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: prj, TeamID: team, Access: "read"}); err != nil {
		t.Fatalf("access of %s to %s: %v", team, prj, err)
	}
}

// accessKeys returns the access keys of e's store that name id.
func (e *env) accessKeys(t testing.TB, id string) []string {
	t.Helper()
	var out []string
	for k := range storagetest.Dump(t, e.raw) {
		if strings.Contains(k, "/access/") && strings.Contains(k, id) || strings.Contains(k, "/cleanup/") {
			out = append(out, k)
		}
	}
	return out
}

// TestDeletionsOfTeamsAndProjectsAtScale, on every store, etcd's limits
// included: a team with access to 70 projects is deleted in an
// organization holding 260 other access grants, and a project that 130
// teams have access to is deleted; their access keys are all gone and the
// team counts are right. (One transaction held them before: on etcd, both
// failed as too large, the team's from 126 grants of other teams on.)
func TestDeletionsOfTeamsAndProjectsAtScale(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		var prjs []Project
		for i := range 70 {
			prjs = append(prjs, e.mkProject(t, fmt.Sprintf("p%02d", i)))
		}
		wide := e.mkProject(t, "wide")
		var teams []Team
		for i := range 130 {
			team, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new(fmt.Sprintf("t%03d", i))})
			if err != nil {
				t.Fatal(err)
			}
			teams = append(teams, team)
			e.grant(t, wide.ID, team.ID)
			if i < 13 {
				for _, p := range prjs[:10] {
					e.grant(t, p.ID, team.ID)
				}
			}
		}
		big, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("big")})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range prjs {
			e.grant(t, p.ID, big.ID)
		}

		if err := e.c.DeleteTeam(root(), big.ID); err != nil {
			t.Fatalf("delete a team with access to 70 projects: %v", err)
		}
		for i, p := range []string{prjs[0].ID, prjs[69].ID} {
			got, err := e.c.Get(root(), p)
			list, lerr := teamAccesses(e.c, root(), p)
			if want := []int{13, 0}[i]; err != nil || lerr != nil || got.TeamCount != want || len(list) != want {
				t.Errorf("project %s: %d teams counted, %d listed (%v, %v), want %d", got.Name, got.TeamCount, len(list), err, lerr, want)
			}
		}
		if left := e.accessKeys(t, big.ID); len(left) > 0 {
			t.Errorf("keys left of the deleted team: %v", left)
		}

		if err := e.c.Delete(root(), wide.ID); err != nil {
			t.Fatalf("delete a project 130 teams have access to: %v", err)
		}
		if left := e.accessKeys(t, wide.ID); len(left) > 0 {
			t.Errorf("keys left of the deleted project: %v", left)
		}
		if _, err := e.c.GetTeamAccess(root(), wide.ID, teams[0].ID); !errors.Is(err, keel.KindNotFound) {
			t.Errorf("access to the deleted project: %v", err)
		}
	})
}

// TestAccessCleanupStoppedMidway: when the deletion of a team's or a
// project's access fails after the team or project is deleted, the team
// reads as not found and its access is listed nowhere; FinishDeletions (in
// a new Catalog, as after a crash) deletes the rest and fixes the counts.
func TestAccessCleanupStoppedMidway(t *testing.T) {
	var fs *faultstore.Store
	e := newEnv(t, everystore.Mem, nil, func(s storage.Store) storage.Store { fs = faultstore.New(s); return fs })
	a, b := e.mkProject(t, "apps"), e.mkProject(t, "base")
	devs, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("devs")})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := e.c.CreateTeam(root(), "acme", TeamRequest{Name: new("ops")})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a.ID, b.ID} {
		e.grant(t, p, devs.ID)
		e.grant(t, p, ops.ID)
	}
	boom := errors.New("disk full")
	fs.Fail(faultstore.OpDelete, "project/ix/acme/access/", -1, boom)
	if err := e.c.DeleteTeam(root(), devs.ID); !errors.Is(err, boom) {
		t.Fatalf("DeleteTeam with its access undeletable: %v", err)
	}
	if err := e.c.Delete(root(), b.ID); !errors.Is(err, boom) {
		t.Fatalf("Delete with its access undeletable: %v", err)
	}
	if _, err := e.c.GetTeam(root(), devs.ID); !errors.Is(err, keel.KindNotFound) {
		t.Errorf("the deleted team: %v", err)
	}
	if list, err := teamAccesses(e.c, root(), a.ID); err != nil || len(list) != 1 || list[0].TeamID != ops.ID {
		t.Errorf("access to apps: %v, %v; want only ops", list, err)
	}
	if _, err := e.c.GetTeamAccess(root(), a.ID, devs.ID); !errors.Is(err, keel.KindNotFound) {
		t.Errorf("access of the deleted team: %v", err)
	}
	if _, err := e.c.PutTeamAccess(root(), TeamAccess{ProjectID: a.ID, TeamID: devs.ID}); keel.KindOf(err) != keel.KindInvalid {
		t.Errorf("access given to the deleted team: %v", err)
	}

	fs.Reset()
	c, err := New(storage.Sub(fs, "project/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.FinishDeletions(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := append(e.accessKeys(t, devs.ID), e.accessKeys(t, b.ID)...); len(left) > 0 {
		t.Errorf("keys left after FinishDeletions: %v", left)
	}
	if got, err := c.Get(root(), a.ID); err != nil || got.TeamCount != 1 {
		t.Errorf("project apps counts %d teams (%v), want 1", got.TeamCount, err)
	}
}
