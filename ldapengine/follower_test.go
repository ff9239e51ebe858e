package ldapengine

import (
	"context"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/internal/keeltest"
	"github.com/keelhq/keel/passwordpolicy"
	"github.com/keelhq/keel/storage"
)

// TestRoleWrittenOnAFollowerIsRotatedWhenDue: on every store, a static
// role written through an engine that runs no worker (a follower; on etcd,
// a Store of another client, as another process) is rotated when due by
// the leader's worker, which slept until a later rotation: the store's
// watch of the due index wakes it, not its own timer.
func TestRoleWrittenOnAFollowerIsRotatedWhenDue(t *testing.T) {
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		dir := newFakeDirectory()
		dir.Add(bindDN, "bind-pw", "cn", "keel")
		dir.Add(aliceDN, "alice-pw", "cn", "alice", "uid", "alice")
		dir.Add(bobDN, "bob-pw", "cn", "bob", "uid", "bob")
		clock := keel.NewFakeClock(t0)
		engine := func(s storage.Store) *Engine {
			pol, err := passwordpolicy.New(storage.Sub(s, policiesPrefix), nil)
			if err != nil {
				t.Fatal(err)
			}
			e, err := New(storage.Sub(s, storePrefix("ldap")), FlavorOpenLDAP, "ldap", &Options{Directory: dir, Clock: clock, Policies: pol})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Stop)
			return e
		}
		lead, follower := engine(store), engine(everystore.Another(t, store))
		if err := lead.PutConfig(ctx, Config{BindDN: bindDN, BindPass: "bind-pw", URL: "ldap://127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
		if err := lead.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
		lead.Start()
		keeltest.Until(t, "the leader plans alice's rotation", func() bool { return lead.worker.Planned().Equal(t0.Add(time.Hour)) })

		if err := follower.PutStaticRole(ctx, "bob", StaticRoleRequest{Username: "bob", DN: bobDN, RotationPeriod: 10 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		before, err := lead.GetStaticCred(ctx, "bob")
		if err != nil {
			t.Fatal(err)
		}
		// The leader plans bob's rotation, or earlier work (it may have
		// seen the follower's import rotation in flight, and retries it).
		keeltest.Until(t, "the leader plans bob's rotation", func() bool {
			p := lead.worker.Planned()
			return !p.IsZero() && !p.After(t0.Add(10*time.Minute))
		})
		clock.Advance(10 * time.Minute)
		keeltest.Until(t, "bob rotated by the leader", func() bool {
			c, err := lead.GetStaticCred(ctx, "bob")
			return err == nil && c.Password != before.Password && dir.Bind(ctx, Conn{}, bobDN, c.Password) == nil
		})
	})
}

// beforeSet is a Directory that runs hook (once) before its first
// SetPassword for dn.
type beforeSet struct {
	Directory
	dn   string
	hook func()
}

func (d *beforeSet) SetPassword(ctx context.Context, c Conn, dn, pw string) error {
	if hook := d.hook; hook != nil && dn == d.dn {
		d.hook = nil
		hook()
	}
	return d.Directory.SetPassword(ctx, c, dn, pw)
}

// TestRotationFinishedByAnotherProcess: two engines on one store (on etcd,
// two clients, as two processes) rotate one role at once: the second takes
// up the first's write-ahead record, sets the same password and stores it
// before the first does. The first then finds its change stored and
// succeeds, instead of failing with "changed during rotation" for a
// rotation that was made; the role holds the one password, which binds.
func TestRotationFinishedByAnotherProcess(t *testing.T) {
	everystore.Run(t, func(t *testing.T, open everystore.Open) {
		t.Parallel()
		ctx := context.Background()
		store := open(t)
		fake := newFakeDirectory()
		fake.Add(bindDN, "bind-pw", "cn", "keel")
		fake.Add(bobDN, "bob-pw", "cn", "bob", "uid", "bob")
		clock := keel.NewFakeClock(t0)
		engine := func(s storage.Store, dir Directory) *Engine {
			e, err := New(storage.Sub(s, storePrefix("ldap")), FlavorOpenLDAP, "ldap", &Options{Directory: dir, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Stop)
			return e
		}
		dir := &beforeSet{Directory: fake, dn: bobDN}
		first, second := engine(store, dir), engine(everystore.Another(t, store), fake)
		if err := first.PutConfig(ctx, Config{BindDN: bindDN, BindPass: "bind-pw", URL: "ldap://127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
		skip := true
		if err := first.PutStaticRole(ctx, "bob", StaticRoleRequest{Username: "bob", DN: bobDN, RotationPeriod: time.Hour, SkipImportRotation: &skip}); err != nil {
			t.Fatal(err)
		}
		var secondErr error
		dir.hook = func() { secondErr = second.RotateRole(ctx, "bob") }
		if err := first.RotateRole(ctx, "bob"); err != nil {
			t.Errorf("the rotation the other process finished: %v", err)
		}
		if secondErr != nil {
			t.Fatalf("the other process's rotation: %v", secondErr)
		}
		c, err := first.GetStaticCred(ctx, "bob")
		if err != nil {
			t.Fatal(err)
		}
		if c.Password == "bob-pw" || fake.Bind(ctx, Conn{}, bobDN, c.Password) != nil {
			t.Errorf("bob's stored password %q does not bind, or is the old one", c.Password)
		}
	})
}
