package ldapengine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

// TestSlapdLibrary runs library sets against a real OpenLDAP slapd: a
// checked-out account binds with its password, which stops working after
// check-in and after the end of the lease. It skips when slapd is not
// installed.
func TestSlapdLibrary(t *testing.T) {
	srv := slapdtest.Start(t)
	ctx := context.Background()
	clock := keel.NewFakeClock(t0)
	s := memstore.New(nil)
	m := newLeases(t, s, &lease.Options{Clock: clock})
	e, err := New(storage.Sub(s, storePrefix("ldap")), FlavorLDAP, "ldap", &Options{Clock: clock, Leases: ldapLeases(t, m, s)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.PutConfig(ctx, Config{BindDN: slapdtest.BindDN, BindPass: slapdtest.BindPW, URL: srv.URL,
		UserDN: slapdtest.UsersDN, UserAttr: "uid", ConnectionTimeout: 2 * time.Second, RequestTimeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	conn := Conn{URLs: []string{srv.URL}}
	dns := map[string]string{"alice": slapdtest.AliceDN, "bob": slapdtest.BobDN}
	bind := func(name, pw string) error { return LDAP{}.Bind(ctx, conn, dns[name], pw) }

	if err := e.PutLibrarySet(ctx, "team", LibrarySetRequest{ServiceAccountNames: []string{"alice", "bob"}}); err != nil {
		t.Fatal(err)
	}
	wantKind(t, bind("alice", slapdtest.AlicePW), keel.KindUnauthenticated)
	wantKind(t, bind("bob", slapdtest.BobPW), keel.KindUnauthenticated)
	err = e.PutLibrarySet(ctx, "other", LibrarySetRequest{ServiceAccountNames: []string{"nobody"}})
	wantKind(t, err, keel.KindInvalid)

	caller := libCaller("tok", "ent")
	t.Run("check-out binds, check-in ends the password", func(t *testing.T) {
		co, err := e.CheckOut(caller, "team", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if co.ServiceAccountName != "alice" {
			t.Fatalf("checked out %q", co.ServiceAccountName)
		}
		if err := bind("alice", co.Password); err != nil {
			t.Fatalf("checked-out account does not bind: %v", err)
		}
		in, err := e.CheckIn(caller, "team", CheckInRequest{})
		if err != nil || !slices.Equal(in, []string{"alice"}) {
			t.Fatalf("check-in %v %v", in, err)
		}
		wantKind(t, bind("alice", co.Password), keel.KindUnauthenticated)
	})
	t.Run("lease end ends the password", func(t *testing.T) {
		co, err := e.CheckOut(caller, "team", CheckOutRequest{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := bind(co.ServiceAccountName, co.Password); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		if _, err := m.Step(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
		wantKind(t, bind(co.ServiceAccountName, co.Password), keel.KindUnauthenticated)
		co2, err := e.CheckOut(caller, "team", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if err := bind(co2.ServiceAccountName, co2.Password); err != nil {
			t.Fatalf("next check-out does not bind: %v", err)
		}
		if _, err := e.CheckIn(caller, "team", CheckInRequest{Manage: true}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("outage during check-in keeps the borrower's password", func(t *testing.T) {
		co, err := e.CheckOut(caller, "team", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		srv.Stop()
		if _, err := e.CheckIn(caller, "team", CheckInRequest{}); err == nil {
			t.Fatal("check-in succeeded with slapd stopped")
		}
		srv.Restart()
		if err := bind(co.ServiceAccountName, co.Password); err != nil {
			t.Fatalf("borrower's password lost in the outage: %v", err)
		}
		if _, err := e.CheckIn(caller, "team", CheckInRequest{}); err != nil {
			t.Fatal(err)
		}
		wantKind(t, bind(co.ServiceAccountName, co.Password), keel.KindUnauthenticated)
	})
}
