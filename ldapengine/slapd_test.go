package ldapengine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/storage/memstore"
)

// TestSlapd runs the engine against a real OpenLDAP slapd (one for all
// cases); it skips when slapd is not installed.
func TestSlapd(t *testing.T) {
	srv := slapdtest.Start(t)
	ctx := context.Background()
	clock := keel.NewFakeClock(t0)
	e, err := New(memstore.New(nil), FlavorLDAP, "ldap", &Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.PutConfig(ctx, Config{BindDN: slapdtest.BindDN, BindPass: slapdtest.BindPW, URL: "ldap://127.0.0.1:1," + srv.URL,
		UserDN: slapdtest.UsersDN, UserAttr: "uid", ConnectionTimeout: 2 * time.Second, RequestTimeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	conn := Conn{URLs: []string{srv.URL}}
	t.Run("root rotation then bind with the new password", func(t *testing.T) {
		if err := e.RotateRoot(ctx); err != nil {
			t.Fatal(err)
		}
		err := LDAP{}.Bind(ctx, conn, slapdtest.BindDN, slapdtest.BindPW)
		wantKind(t, err, keel.KindUnauthenticated)
		var cfg Config
		cfg, _ = e.loadConfig(ctx)
		if err := (LDAP{}).Bind(ctx, conn, slapdtest.BindDN, cfg.BindPass); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("static role by search, user binds with static-cred", func(t *testing.T) {
		if err := e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", RotationPeriod: time.Minute}); err != nil {
			t.Fatal(err)
		}
		c, err := e.GetStaticCred(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if c.DN != slapdtest.AliceDN {
			t.Fatalf("dn %q", c.DN)
		}
		if err := (LDAP{}).Bind(ctx, conn, slapdtest.AliceDN, c.Password); err != nil {
			t.Fatal(err)
		}
		wantKind(t, LDAP{}.Bind(ctx, conn, slapdtest.AliceDN, slapdtest.AlicePW), keel.KindUnauthenticated)
	})
	t.Run("scheduled rotation", func(t *testing.T) {
		before, _ := e.GetStaticCred(ctx, "alice")
		clock.Advance(time.Minute)
		if _, err := e.Step(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
		c, _ := e.GetStaticCred(ctx, "alice")
		if c.Password == before.Password || c.LastPassword != before.Password {
			t.Fatal("not rotated")
		}
		if err := (LDAP{}).Bind(ctx, conn, slapdtest.AliceDN, c.Password); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("static role of a missing entry refused and not stored", func(t *testing.T) {
		err := e.PutStaticRole(ctx, "ghost", StaticRoleRequest{Username: "ghost", DN: "uid=ghost," + slapdtest.UsersDN, RotationPeriod: time.Minute})
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "DN" {
			t.Fatalf("error %v, want one problem on DN", err)
		}
		if _, err := e.GetStaticRole(ctx, "ghost"); !errors.Is(err, keel.KindNotFound) {
			t.Fatalf("refused role stored: %v", err)
		}
	})
	t.Run("a refused bind account is the configuration's fault", func(t *testing.T) {
		other, err := New(memstore.New(nil), FlavorLDAP, "ldap", &Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		if err := other.PutConfig(ctx, Config{BindDN: slapdtest.BindDN, BindPass: "wrong", URL: srv.URL, RequestTimeout: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		err = other.RotateRoot(ctx)
		if keel.KindOf(err) != keel.KindConflict || !strings.Contains(err.Error(), "Invalid Credentials") {
			t.Fatalf("rotate-root with a wrong bindpass: %v (kind %v), want a conflict naming the LDAP error", err, keel.KindOf(err))
		}
	})
	t.Run("outage during rotation then recovery", func(t *testing.T) {
		if err := e.PutStaticRole(ctx, "bob", StaticRoleRequest{Username: "bob", DN: slapdtest.BobDN, RotationPeriod: time.Minute}); err != nil {
			t.Fatal(err)
		}
		srv.Stop()
		if err := e.RotateRole(ctx, "bob"); err == nil {
			t.Fatal("rotation succeeded with slapd stopped")
		}
		srv.Restart()
		clock.Advance(defaultRetryInterval)
		if _, err := e.Step(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
		c, _ := e.GetStaticCred(ctx, "bob")
		if err := (LDAP{}).Bind(ctx, conn, slapdtest.BobDN, c.Password); err != nil {
			t.Fatalf("stored password does not bind after recovery: %v", err)
		}
	})
}
