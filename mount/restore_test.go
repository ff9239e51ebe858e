package mount_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/snapshot"
	"github.com/keelhq/keel/storage"
)

// creds is a program's engine that keeps credentials: a Restorer. The
// engine of the mount "broken/" fails to mark itself.
type creds struct {
	tokens
	path   string
	marked atomic.Int32
}

func (e *creds) MarkRestored(context.Context) error {
	e.marked.Add(1)
	if e.path == "broken/" {
		return fmt.Errorf("creds: the directory is unreachable: %w", keel.KindUnavailable)
	}
	return nil
}

func (e *creds) revokedIDs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.revoked...)
}

// credsTable opens a table on store that mounts the type "creds".
func credsTable(t *testing.T, store storage.Store, clock keel.Clock, authz keel.Authorizer) *mount.Table {
	t.Helper()
	typ := mount.EngineType{Build: func(env mount.Env) (mount.Engine, error) {
		e := &creds{tokens: tokens{store: env.Store, leases: env.Leases}, path: env.Entry.Path}
		env.Leases.SetRevoker(e)
		return e, nil
	}}
	table, err := mount.Open(ctx, store, &mount.Options{Authorizer: authz, Clock: clock,
		Types: map[string]mount.EngineType{"creds": typ}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	return table
}

func credsOf(t *testing.T, table *mount.Table, path string) *creds {
	t.Helper()
	m, _, ok := table.Route(path + "x")
	if !ok {
		t.Fatalf("%s is not served", path)
	}
	e, ok := m.Engine.(*creds)
	if !ok {
		t.Fatalf("%s is served by %T", path, m.Engine)
	}
	return e
}

// TestMarkRestored: a copy restored into the store of a running table
// with PrepareRestore is held before any of its keys is written; then
// MarkRestored serves the copy's mounts at once (not at the table's next
// watch), marks every engine that is a Restorer, reports the one that
// fails with its path without stopping the others, and keeps the copy's
// due lease, in this table and in another opened on the store, until
// Release.
func TestMarkRestored(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		clock := keel.NewFakeClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
		src := openStore(t)
		a := credsTable(t, src, clock, keel.AllowAll{})
		for _, req := range []mount.EnableRequest{{Path: "creds/", Type: "creds"}, {Path: "broken/", Type: "creds"}, {Path: "plain/", Type: "kv"}} {
			if _, err := a.Enable(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		l, err := credsOf(t, a, "creds/").issue(ctx, "app", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var saved bytes.Buffer
		if _, err := snapshot.Save(ctx, src, &saved, nil); err != nil {
			t.Fatal(err)
		}

		dst := openStore(t)
		b := credsTable(t, dst, clock, keel.AllowAll{})
		if _, err := b.Enable(ctx, mount.EnableRequest{Path: "old/", Type: "kv"}); err != nil {
			t.Fatal(err)
		}
		if _, err := snapshot.Restore(ctx, &saved, dst, &snapshot.RestoreOptions{Replace: true, Prepare: mount.PrepareRestore}); err != nil {
			t.Fatal(err)
		}
		if held, err := b.Leases().Held(ctx); err != nil || !held {
			t.Fatalf("held after a restore prepared by PrepareRestore = %v, %v; want true before MarkRestored", held, err)
		}

		err = b.MarkRestored(ctx)
		if err == nil || !strings.Contains(err.Error(), `"broken/"`) || strings.Contains(err.Error(), `"creds/"`) || keel.KindOf(err) != keel.KindUnavailable {
			t.Fatalf("MarkRestored = %v, want the failure of broken/ alone, of kind unavailable", err)
		}
		if !strings.HasPrefix(err.Error(), "mount: ") || strings.Count(err.Error(), "mount: ") != 1 {
			t.Errorf("error %q: want one prefix", err)
		}
		if got := strings.Join(served(t, b), " "); got != "broken/ creds/ plain/" {
			t.Fatalf("served right after MarkRestored: %s, want the copy's mounts", got)
		}
		e := credsOf(t, b, "creds/")
		if e.marked.Load() != 1 || credsOf(t, b, "broken/").marked.Load() != 1 {
			t.Fatalf("marked creds/ %d, broken/ %d times; want once each", e.marked.Load(), credsOf(t, b, "broken/").marked.Load())
		}

		// The copy's lease, due long ago, is kept by this table and by
		// another one on the store, until Release.
		c := credsTable(t, dst, clock, keel.AllowAll{})
		later := l.ExpireTime.Add(time.Hour)
		clock.Set(later) // the workers of b and c run too
		for _, table := range []*mount.Table{b, c} {
			if _, err := table.Leases().Step(ctx, later); err != nil {
				t.Fatal(err)
			}
			if got, err := table.Leases().Get(ctx, l.ID); err != nil || !got.Held {
				t.Fatalf("the copy's due lease after a Step = %+v, %v; want it kept, held", got, err)
			}
		}
		ec := credsOf(t, c, "creds/")
		if n := len(e.revokedIDs()) + len(ec.revokedIDs()); n != 0 {
			t.Fatalf("%d held leases revoked", n)
		}
		if err := b.Leases().Release(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Leases().Step(ctx, later); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Leases().Get(ctx, l.ID); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("the lease after Release and a Step: %v, want it revoked", err)
		}
		// Both tables' workers may have revoked it (see lease's Caveats).
		got := append(e.revokedIDs(), ec.revokedIDs()...)
		if len(got) == 0 || strings.Count(strings.Join(got, " "), l.ID) != len(got) {
			t.Fatalf("after Release: revoked %q, want %s", got, l.ID)
		}
	})
}

// TestMarkRestoredRights: MarkRestored needs sudo on sys/leases/hold; a
// caller without it holds nothing and marks no engine.
func TestMarkRestoredRights(t *testing.T) {
	authz, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{
		"reader": {{Path: "sys/*", Capabilities: []keel.Capability{keel.CapRead}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	store := everystore.Mem(t)
	table := credsTable(t, store, nil, authz)
	root := keel.WithPrincipal(ctx, keel.Principal{ID: "root", Policies: []string{keel.RootPolicy}})
	if _, err := table.Enable(root, mount.EnableRequest{Path: "creds/", Type: "creds"}); err != nil {
		t.Fatal(err)
	}
	reader := keel.WithPrincipal(ctx, keel.Principal{ID: "r", Policies: []string{"reader"}})
	wantKind(t, table.MarkRestored(reader), keel.KindForbidden)
	if held, err := table.Leases().Held(root); err != nil || held {
		t.Fatalf("held after a refused MarkRestored = %v, %v", held, err)
	}
	if n := credsOf(t, table, "creds/").marked.Load(); n != 0 {
		t.Fatalf("a refused MarkRestored marked the engine %d times", n)
	}
	if err := table.MarkRestored(root); err != nil {
		t.Fatal(err)
	}
	if n := credsOf(t, table, "creds/").marked.Load(); n != 1 {
		t.Fatalf("marked %d times, want 1", n)
	}
}

// unwatched is a store that reports no change (no storage.Watcher): a
// table on it follows only what it is told.
type unwatched struct{ storage.Store }

// TestMarkRestoredFollowsTheCopy: MarkRestored serves the mounts of the
// copy and marks their engines though nothing told the table the stored
// table changed.
func TestMarkRestoredFollowsTheCopy(t *testing.T) {
	src := everystore.Mem(t)
	a := credsTable(t, src, nil, keel.AllowAll{})
	if _, err := a.Enable(ctx, mount.EnableRequest{Path: "creds/", Type: "creds"}); err != nil {
		t.Fatal(err)
	}
	var saved bytes.Buffer
	if _, err := snapshot.Save(ctx, src, &saved, nil); err != nil {
		t.Fatal(err)
	}
	dst := unwatched{everystore.Mem(t)}
	b := credsTable(t, dst, nil, keel.AllowAll{})
	if _, err := snapshot.Restore(ctx, &saved, dst, &snapshot.RestoreOptions{Replace: true, Prepare: mount.PrepareRestore}); err != nil {
		t.Fatal(err)
	}
	if got := served(t, b); len(got) != 0 {
		t.Fatalf("served before MarkRestored: %v (the store reports no change)", got)
	}
	if err := b.MarkRestored(ctx); err != nil {
		t.Fatal(err)
	}
	if n := credsOf(t, b, "creds/").marked.Load(); n != 1 {
		t.Fatalf("the copy's engine marked %d times, want 1", n)
	}
}
