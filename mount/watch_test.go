package mount_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/ldapengine/ldaptest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/storagetest"
)

// openClocked opens a table over store with the fake clock and no
// defaults.
func openClocked(t testing.TB, store storage.Store, clock keel.Clock) *mount.Table {
	t.Helper()
	table, err := mount.Open(ctx, store, &mount.Options{Authorizer: keel.AllowAll{}, Clock: clock, Directory: ldaptest.NewDirectory(),
		Leases: &lease.Options{RetryBase: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { table.Close() })
	return table
}

// TestTablesFollowTheStoredTable: two tables on one store (two processes
// on one etcd, or two in one program) serve what either enables, stop
// serving what either disables, and rebuild what either tunes; the lease
// worker of the table that did not enable a mount revokes its leases.
func TestTablesFollowTheStoredTable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		clock := keel.NewFakeClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
		a, b := openClocked(t, store, clock), openClocked(t, store, clock)

		// Enabled through a, served by b.
		if _, err := a.Enable(ctx, mount.EnableRequest{Path: "late/", Type: "kv", Options: map[string]string{"leased_passthrough": "true"}}); err != nil {
			t.Fatal(err)
		}
		keeltest.Until(t, "b serves late/", func() bool { _, _, ok := b.Route("late/x"); return ok })
		mb, _, _ := b.Route("late/x")
		if err := mb.KV.Write(ctx, "x", map[string]any{"v": "1", "ttl": "2s"}); err != nil {
			t.Fatalf("write through b: %v", err)
		}
		// Leases of reads through both tables are revoked at expiry by
		// the worker of b alone (as the leader would), which learned the
		// mount from the stored table.
		var ids []string
		for _, table := range []*mount.Table{a, b} {
			m, _, _ := table.Route("late/x")
			s, err := m.KV.Read(ctx, "x")
			if err != nil || s.LeaseID == "" {
				t.Fatalf("leased read: %+v, %v", s, err)
			}
			ids = append(ids, s.LeaseID)
		}
		if _, err := b.Leases().Step(ctx, clock.Now().Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, err := a.Leases().Get(ctx, id); keel.KindOf(err) != keel.KindNotFound {
				t.Fatalf("lease %s after its expiry: %v, want it revoked", id, err)
			}
		}

		// Tuned through a, rebuilt in b.
		hour := time.Hour
		if _, err := a.Tune(ctx, "late/", mount.TuneRequest{DefaultTTL: &hour}); err != nil {
			t.Fatal(err)
		}
		keeltest.Until(t, "b sees the tune", func() bool { m, _, _ := b.Route("late/x"); return m.DefaultTTL == time.Hour })

		// Disabled through a: b stops serving it, and an engine b (or the
		// program) kept writes nothing, nor reads.
		stale, _, _ := b.Route("late/x")
		if err := a.Disable(ctx, "late/"); err != nil {
			t.Fatal(err)
		}
		keeltest.Until(t, "b stops serving late/", func() bool { _, _, ok := b.Route("late/x"); return !ok })
		wantKind(t, stale.KV.Write(ctx, "y", map[string]any{"v": "2"}), keel.KindNotFound)
		_, err := stale.KV.Read(ctx, "x")
		wantKind(t, err, keel.KindNotFound)
		if left := leftOf(t, store, stale.Entry); len(left) != 0 {
			t.Fatalf("keys of the disabled mount left: %q", left)
		}
		keeltest.Until(t, "b drops late/ from its list", func() bool {
			_, err := b.Get(ctx, "late/")
			return keel.KindOf(err) == keel.KindNotFound
		})

		// Enabled again at the same path: the old engine still writes
		// nothing; the new one starts empty, in both tables.
		if _, err := b.Enable(ctx, mount.EnableRequest{Path: "late/", Type: "kv"}); err != nil {
			t.Fatal(err)
		}
		wantKind(t, stale.KV.Write(ctx, "z", map[string]any{"v": "3"}), keel.KindNotFound)
		keeltest.Until(t, "a serves the new late/", func() bool {
			m, _, ok := a.Route("late/x")
			return ok && m.UUID != stale.UUID
		})
		ma, _, _ := a.Route("late/x")
		if keys, err := ma.KV.List(ctx, "", keel.ListRequest{}); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("the new mount lists %q (%v)", keys, err)
		}
	})
}

// TestDirectoryMountFollowed: an ldap mount enabled through one table is
// served by the other with its engine, and its data cannot be planted
// through a stale engine after a Disable: the mount enabled again at the
// path does not see it.
func TestDirectoryMountFollowed(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		clock := keel.NewFakeClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
		a, b := openClocked(t, store, clock), openClocked(t, store, clock)
		if _, err := a.Enable(ctx, mount.EnableRequest{Path: "dir/", Type: "ldap"}); err != nil {
			t.Fatal(err)
		}
		keeltest.Until(t, "b serves dir/", func() bool { m, _, ok := b.Route("dir/config"); return ok && m.LDAP != nil })
		stale, _, _ := b.Route("dir/config")
		if err := a.Disable(ctx, "dir/"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Enable(ctx, mount.EnableRequest{Path: "dir/", Type: "ldap"}); err != nil {
			t.Fatal(err)
		}
		before := storagetest.Dump(t, store)
		cfg := ldapengine.Config{BindDN: "cn=admin,dc=example,dc=org", BindPass: "planted", URL: "ldap://planted.example:389"}
		wantKind(t, stale.LDAP.PutConfig(ctx, cfg), keel.KindNotFound)
		after := storagetest.Dump(t, store)
		for k := range after {
			if _, ok := before[k]; !ok || after[k] != before[k] {
				t.Fatalf("a stale engine wrote %s", k)
			}
		}
	})
}

// TestOldTableGetsGuards: a table stored before guard keys existed (the
// example server's older files) opens with every mount served and
// writable.
func TestOldTableGetsGuards(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		table := open(t, store)
		table.Close()
		var guards []string
		for k := range storagetest.Dump(t, store) {
			if strings.HasPrefix(k, "sys/mount-guards/") {
				guards = append(guards, k)
			}
		}
		if len(guards) != 3 {
			t.Fatalf("guards %q, want one per default mount", guards)
		}
		err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			for _, k := range guards {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		table = open(t, store)
		m, _, ok := table.Route("secret/x")
		if !ok {
			t.Fatal("secret/ not served")
		}
		if err := m.KV.Write(ctx, "x", map[string]any{"v": "1"}); err != nil {
			t.Fatalf("write to a mount of an old table: %v", err)
		}
		var after []string
		for k := range storagetest.Dump(t, store) {
			if strings.HasPrefix(k, "sys/mount-guards/") {
				after = append(after, k)
			}
		}
		slices.Sort(guards)
		slices.Sort(after)
		if !slices.Equal(guards, after) {
			t.Fatalf("guards after Open %q, want %q", after, guards)
		}
	})
}

// blockingStore holds its Views while block is set, until their context
// ends: a store unreachable at shutdown.
type blockingStore struct {
	storage.Store
	block atomic.Bool
}

func (s *blockingStore) View(ctx context.Context, fn func(context.Context, storage.Tx) error) error {
	if s.block.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Store.View(ctx, fn)
}

func (s *blockingStore) Watch(ctx context.Context, prefix string, fn func(string)) (func(), error) {
	return storage.Watch(ctx, s.Store, prefix, fn)
}

// TestCloseWhileTheStoreHangs: Close returns while the table follows a
// change through a store that does not answer.
func TestCloseWhileTheStoreHangs(t *testing.T) {
	store := everystore.Mem(t)
	bs := &blockingStore{Store: store}
	a := open(t, store)
	b := open(t, bs)
	bs.block.Store(true)
	if _, err := a.Enable(ctx, mount.EnableRequest{Path: "x/", Type: "kv"}); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		b.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(keeltest.WaitBound):
		t.Fatalf("Close did not return in %s while the store hung", keeltest.WaitBound)
	}
}

// TestNoLeaseOutlivesItsMount: a lease issued while its mount is being
// disabled (a request routed before the mount was marked) is revoked with
// the mount, and the next mount at the path starts with none.
func TestNoLeaseOutlivesItsMount(t *testing.T) {
	onEveryStore(t, func(t *testing.T, openStore everystore.Open) {
		store := openStore(t)
		var once sync.Once
		var late string
		typ := mount.EngineType{Build: func(env mount.Env) (mount.Engine, error) {
			e := &tokens{store: env.Store, leases: env.Leases}
			env.Leases.SetRevoker(lease.RevokerFunc(func(ctx context.Context, l lease.Lease) error {
				// The first revocation lets a request in flight issue
				// one more lease.
				once.Do(func() {
					nl, err := e.issue(ctx, "0", time.Hour) // sorts before the lease being revoked
					if err != nil {
						t.Errorf("a lease issued during the revocations: %v", err)
					}
					late = nl.ID
				})
				return nil
			}))
			return e, nil
		}}
		table, err := mount.Open(ctx, store, &mount.Options{Authorizer: keel.AllowAll{},
			Types: map[string]mount.EngineType{"tokens": typ}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { table.Close() })
		if _, err := table.Enable(ctx, mount.EnableRequest{Path: "tok/", Type: "tokens"}); err != nil {
			t.Fatal(err)
		}
		m, _, _ := table.Route("tok/")
		if _, err := m.Engine.(*tokens).issue(ctx, "a", time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := table.Disable(ctx, "tok/"); err != nil {
			t.Fatal(err)
		}
		if late == "" {
			t.Fatal("no lease was issued during the revocations")
		}
		if ids, err := table.Leases().List(ctx, "tok/", keel.ListRequest{}); err != nil || len(ids.Items) != 0 {
			t.Fatalf("leases left after Disable: %q, %v", ids, err)
		}
		if _, err := table.Enable(ctx, mount.EnableRequest{Path: "tok/", Type: "tokens"}); err != nil {
			t.Fatal(err)
		}
		if _, err := table.Leases().Get(ctx, late); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("the lease issued during the removal, under the new mount: %v", err)
		}
	})
}
