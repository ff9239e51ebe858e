package project

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
)

// TestConcurrentWorkspaces: workers create workspaces in one project at
// once, move every other one to a second project, and race for one
// workspace name and one project name (in different spellings): each name
// is taken once, and each project's count matches the workspaces it
// lists.
func TestConcurrentWorkspaces(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		e := newEnv(t, open, nil, nil)
		a, b := e.mkProject(t, "apps"), e.mkProject(t, "base")
		const workers, each = 8, 6
		var wg sync.WaitGroup
		errs := make(chan error, workers*3)
		var wsWon, prjWon atomic.Int32
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					ws, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new(fmt.Sprintf("w%d-%d", w, i)), ProjectID: new(a.ID)})
					if err != nil {
						errs <- err
						return
					}
					if i%2 == 1 {
						if err := e.c.MoveWorkspaces(root(), b.ID, []string{ws.ID}); err != nil {
							errs <- err
							return
						}
					}
				}
				spelling := []string{"shared", "Shared", "SHARED", "sHaReD"}[w%4]
				switch _, err := e.c.CreateWorkspace(root(), "acme", WorkspaceRequest{Name: new(spelling), ProjectID: new(b.ID)}); {
				case err == nil:
					wsWon.Add(1)
				case keel.KindOf(err) != keel.KindAlreadyExists:
					errs <- fmt.Errorf("workspace %q: %w", spelling, err)
				}
				switch _, err := e.c.Create(root(), "acme", ProjectRequest{Name: &spelling}); {
				case err == nil:
					prjWon.Add(1)
				case keel.KindOf(err) != keel.KindAlreadyExists:
					errs <- fmt.Errorf("project %q: %w", spelling, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if wsWon.Load() != 1 || prjWon.Load() != 1 {
			t.Fatalf("%d workspaces and %d projects took the one name", wsWon.Load(), prjWon.Load())
		}
		for _, p := range []struct {
			id   string
			want int
		}{{a.ID, workers * each / 2}, {b.ID, workers*each/2 + 1}} {
			got, err := e.c.Get(root(), p.id)
			if err != nil {
				t.Fatal(err)
			}
			list, err := projectWorkspaces(e.c, root(), p.id)
			if err != nil {
				t.Fatal(err)
			}
			if got.WorkspaceCount != p.want || len(list) != p.want {
				t.Fatalf("project %s counts %d workspaces and lists %d, want %d", got.Name, got.WorkspaceCount, len(list), p.want)
			}
			for _, w := range list {
				if w.ProjectID != p.id {
					t.Fatalf("workspace %s listed in %s is in %s", w.Name, p.id, w.ProjectID)
				}
			}
		}
		page, err := e.c.List(root(), "acme", ListRequest{})
		if err != nil || page.Total != 4 {
			t.Fatalf("projects: %+v, %v; want the default, apps, base and one shared", page, err)
		}
	})
}
