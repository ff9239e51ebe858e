package mount_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/ldapengine/ldaptest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/storagetest"
)

// eventually waits until cond holds, failing t after a bound far beyond
// what the watch needs (it sees a change within milliseconds; a loaded
// machine may take longer, never this long).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// openClocked opens a table over store with the fake clock and no
// defaults.
func openClocked(t testing.TB, store storage.Store, clock keel.Clock) *mount.Table {
	t.Helper()
	table, err := mount.Open(ctx, store, &mount.Options{Authorizer: keel.AllowAll{}, Clock: clock, Directory: ldaptest.NewDirectory(),
		Leases: &lease.Options{RetryBase: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(table.Close)
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
		eventually(t, "b serves late/", func() bool { _, _, ok := b.Route("late/x"); return ok })
		mb, _, _ := b.Route("late/x")
		if err := mb.KV.Write(ctx, "x", map[string]any{"v": "1", "ttl": "2s"}); err != nil {
			t.Fatalf("write through b: %v", err)
		}
		s, err := mb.KV.Read(ctx, "x")
		if err != nil || s.LeaseID == "" {
			t.Fatalf("leased read through b: %+v, %v", s, err)
		}
		// a's worker (as the leader would) revokes b's lease at expiry,
		// and b's worker too: each knows the mount.
		for _, table := range []*mount.Table{a, b} {
			if _, err := table.Leases().Step(ctx, clock.Now().Add(3*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.Leases().Lookup(ctx, s.LeaseID); keel.KindOf(err) != keel.KindNotFound {
			t.Fatalf("the lease after its expiry: %v, want it revoked", err)
		}

		// Tuned through a, rebuilt in b.
		hour := time.Hour
		if _, err := a.Tune(ctx, "late/", mount.TuneRequest{DefaultTTL: &hour}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "b sees the tune", func() bool { m, _, _ := b.Route("late/x"); return m.DefaultTTL == time.Hour })

		// Disabled through a: b stops serving it, and an engine b (or the
		// program) kept writes nothing, nor reads.
		stale, _, _ := b.Route("late/x")
		if err := a.Disable(ctx, "late/"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "b stops serving late/", func() bool { _, _, ok := b.Route("late/x"); return !ok })
		wantKind(t, stale.KV.Write(ctx, "y", map[string]any{"v": "2"}), keel.KindNotFound)
		_, err = stale.KV.Read(ctx, "x")
		wantKind(t, err, keel.KindNotFound)
		if left := leftOf(t, store, stale.Entry); len(left) != 0 {
			t.Fatalf("keys of the disabled mount left: %q", left)
		}
		eventually(t, "b drops late/ from its list", func() bool {
			_, err := b.Get(ctx, "late/")
			return keel.KindOf(err) == keel.KindNotFound
		})

		// Enabled again at the same path: the old engine still writes
		// nothing; the new one starts empty, in both tables.
		if _, err := b.Enable(ctx, mount.EnableRequest{Path: "late/", Type: "kv"}); err != nil {
			t.Fatal(err)
		}
		wantKind(t, stale.KV.Write(ctx, "z", map[string]any{"v": "3"}), keel.KindNotFound)
		eventually(t, "a serves the new late/", func() bool {
			m, _, ok := a.Route("late/x")
			return ok && m.UUID != stale.UUID
		})
		ma, _, _ := a.Route("late/x")
		if keys, err := ma.KV.List(ctx, ""); keel.KindOf(err) != keel.KindNotFound {
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
		eventually(t, "b serves dir/", func() bool { m, _, ok := b.Route("dir/config"); return ok && m.LDAP != nil })
		stale, _, _ := b.Route("dir/config")
		if err := a.Disable(ctx, "dir/"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Enable(ctx, mount.EnableRequest{Path: "dir/", Type: "ldap"}); err != nil {
			t.Fatal(err)
		}
		before := storagetest.Dump(t, store)
		cfg := ldapengine.Config{BindDN: "cn=admin,dc=example,dc=org", BindPass: "planted", URL: "ldap://planted.example:389"}
		wantKind(t, stale.LDAP.WriteConfig(ctx, cfg), keel.KindNotFound)
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
