package ldapengine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/faultstore"
)

func TestLibrarySetLifecycle(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 3, libOptions{})
		v.putSet(t, "team", libSvcName(0), libSvcName(1))

		got, err := v.e.GetLibrarySet(ctx, "team")
		if err != nil {
			t.Fatal(err)
		}
		want := LibrarySet{Name: "team", ServiceAccountNames: []string{"svc0", "svc1"}, TTL: 24 * time.Hour, MaxTTL: 24 * time.Hour}
		if !equalSet(got, want) {
			t.Fatalf("read %+v, want the 24h defaults %+v", got, want)
		}
		// An update changes only what it names.
		if err := v.e.PutLibrarySet(ctx, "team", LibrarySetRequest{TTL: libPtr(time.Hour), DisableCheckInEnforcement: libPtr(true)}); err != nil {
			t.Fatal(err)
		}
		got, _ = v.e.GetLibrarySet(ctx, "team")
		want.TTL, want.DisableCheckInEnforcement = time.Hour, true
		if !equalSet(got, want) {
			t.Fatalf("after partial update %+v, want %+v", got, want)
		}
		// Zero is unlimited, and accepted.
		if err := v.e.PutLibrarySet(ctx, "team", LibrarySetRequest{TTL: libPtr(time.Duration(0)), MaxTTL: libPtr(time.Duration(0))}); err != nil {
			t.Fatal(err)
		}
		got, _ = v.e.GetLibrarySet(ctx, "team")
		if got.TTL != 0 || got.MaxTTL != 0 {
			t.Fatalf("zero ttls not kept: %+v", got)
		}
		v.putSet(t, "apps", libSvcName(2))
		names, err := listAll(ctx, v.e.ListLibrarySets, "")
		if err != nil || !slices.Equal(names, []string{"apps", "team"}) {
			t.Fatalf("list %v %v", names, err)
		}
		if err := v.e.DeleteLibrarySet(ctx, "team"); err != nil {
			t.Fatal(err)
		}
		_, err = v.e.GetLibrarySet(ctx, "team")
		wantKind(t, err, keel.KindNotFound)
		// Deleting a missing set succeeds; the accounts are free for a role.
		if err := v.e.DeleteLibrarySet(ctx, "team"); err != nil {
			t.Fatal(err)
		}
		if err := v.e.PutStaticRole(ctx, "r", StaticRoleRequest{Username: "svc0", DN: libSvcDN(0), RotationPeriod: time.Hour}); err != nil {
			t.Fatalf("account of a deleted set not freed: %v", err)
		}
		names, _ = listAll(ctx, v.e.ListLibrarySets, "")
		if !slices.Equal(names, []string{"apps"}) {
			t.Fatalf("list after delete %v", names)
		}
	})
}

func equalSet(a, b LibrarySet) bool {
	return a.Name == b.Name && slices.Equal(a.ServiceAccountNames, b.ServiceAccountNames) && a.TTL == b.TTL &&
		a.MaxTTL == b.MaxTTL && a.DisableCheckInEnforcement == b.DisableCheckInEnforcement
}

func TestLibrarySetRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		cases := map[string]struct {
			name  string
			req   LibrarySetRequest
			field string
		}{
			"bad set name":             {"a//b", LibrarySetRequest{ServiceAccountNames: []string{"svc0"}}, "Name"},
			"accounts required":        {"s", LibrarySetRequest{}, "ServiceAccountNames"},
			"at least one account":     {"s", LibrarySetRequest{ServiceAccountNames: []string{}}, "ServiceAccountNames"},
			"empty account name":       {"s", LibrarySetRequest{ServiceAccountNames: []string{""}}, "ServiceAccountNames[0]"},
			"account named twice":      {"s", LibrarySetRequest{ServiceAccountNames: []string{"svc0", "svc0"}}, "ServiceAccountNames[1]"},
			"control character":        {"s", LibrarySetRequest{ServiceAccountNames: []string{"svc\n0"}}, "ServiceAccountNames[0]"},
			"name too long":            {"s", LibrarySetRequest{ServiceAccountNames: []string{strings.Repeat("x", maxServiceAccountNameLen+1)}}, "ServiceAccountNames[0]"},
			"account not in directory": {"s", LibrarySetRequest{ServiceAccountNames: []string{"svc0", "nobody"}}, "ServiceAccountNames[1]"},
			"negative ttl":             {"s", LibrarySetRequest{ServiceAccountNames: []string{"svc0"}, TTL: libPtr(-time.Second)}, "TTL"},
			"negative max_ttl":         {"s", LibrarySetRequest{ServiceAccountNames: []string{"svc0"}, MaxTTL: libPtr(-time.Second)}, "MaxTTL"},
			"max_ttl below ttl":        {"s", LibrarySetRequest{ServiceAccountNames: []string{"svc0"}, TTL: libPtr(2 * time.Hour), MaxTTL: libPtr(time.Hour)}, "MaxTTL"},
			"ttl above default max":    {"s", LibrarySetRequest{ServiceAccountNames: []string{"svc0"}, TTL: libPtr(25 * time.Hour)}, "MaxTTL"},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				v := newLibEnv(t, open, 1, libOptions{})
				changes := v.dir.Changes()
				err := v.e.PutLibrarySet(ctx, tc.name, tc.req)
				wantKind(t, err, keel.KindInvalid)
				if fe := keel.FieldErrors(err); len(fe) == 0 || fe[0].Field != tc.field {
					t.Fatalf("field errors %v, want %s", fe, tc.field)
				}
				// Nothing stored, no password changed.
				if names, _ := listAll(ctx, v.e.ListLibrarySets, ""); len(names) != 0 {
					t.Fatalf("sets stored: %v", names)
				}
				if v.dir.Changes() != changes {
					t.Fatal("a password changed")
				}
			})
		}
		t.Run("engine not configured", func(t *testing.T) {
			v := newLibEnv(t, open, 1, libOptions{})
			if err := v.e.DeleteConfig(ctx); err != nil {
				t.Fatal(err)
			}
			err := v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{ServiceAccountNames: []string{"svc0"}})
			wantKind(t, err, keel.KindNotFound)
		})
	})
}

func TestLibraryOpenLDAPRefuses(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 1, libOptions{flavor: FlavorOpenLDAP})
		calls := map[string]error{
			"put": v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{ServiceAccountNames: []string{"svc0"}}),
		}
		_, calls["read"] = v.e.GetLibrarySet(ctx, "s")
		_, calls["list"] = listAll(ctx, v.e.ListLibrarySets, "")
		calls["delete"] = v.e.DeleteLibrarySet(ctx, "s")
		_, calls["status"] = v.e.GetLibraryStatus(ctx, "s")
		_, calls["check-out"] = v.e.CheckOut(ctx, "s", CheckOutRequest{})
		_, calls["check-in"] = v.e.CheckIn(ctx, "s", CheckInRequest{Manage: true})
		for op, err := range calls {
			wantKind(t, err, keel.KindInvalid)
			if !strings.Contains(err.Error(), `"openldap"`) {
				t.Fatalf("%s: %v does not name the flavor", op, err)
			}
		}
	})
}

func TestLibraryAccountHasOneOwner(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 3, libOptions{})
		if err := v.e.PutStaticRole(ctx, "role0", StaticRoleRequest{Username: "svc0", RotationPeriod: time.Hour}); err != nil {
			t.Fatal(err)
		}
		v.putSet(t, "a", "svc1")
		for name, tc := range map[string]struct {
			set, account, want string
		}{
			"account of a static role": {"b", "svc0", `static role "role0"`},
			"account of another set":   {"b", "svc1", `library set "a"`},
		} {
			t.Run(name, func(t *testing.T) {
				err := v.e.PutLibrarySet(ctx, tc.set, LibrarySetRequest{ServiceAccountNames: []string{"svc2", tc.account}})
				wantKind(t, err, keel.KindConflict)
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%v does not name %s", err, tc.want)
				}
				// Nothing of the refused set stays: svc2 is still free.
				if _, err := v.e.GetLibrarySet(ctx, tc.set); !errors.Is(err, keel.KindNotFound) {
					t.Fatalf("refused set stored: %v", err)
				}
			})
		}
		t.Run("static role on an account of a set", func(t *testing.T) {
			err := v.e.PutStaticRole(ctx, "role1", StaticRoleRequest{Username: "svc1", RotationPeriod: time.Hour})
			wantKind(t, err, keel.KindConflict)
			if !strings.Contains(err.Error(), `"library:a"`) {
				t.Fatalf("%v does not name the set", err)
			}
		})
		t.Run("update adding an owned account", func(t *testing.T) {
			err := v.e.PutLibrarySet(ctx, "a", LibrarySetRequest{ServiceAccountNames: []string{"svc1", "svc0"}})
			wantKind(t, err, keel.KindConflict)
			s, _ := v.e.GetLibrarySet(ctx, "a")
			if !slices.Equal(s.ServiceAccountNames, []string{"svc1"}) {
				t.Fatalf("set changed to %v", s.ServiceAccountNames)
			}
		})
		t.Run("removed account is free again", func(t *testing.T) {
			if err := v.e.PutLibrarySet(ctx, "a", LibrarySetRequest{ServiceAccountNames: []string{"svc2"}}); err != nil {
				t.Fatal(err)
			}
			v.putSet(t, "b", "svc1")
		})
	})
}

func TestLibraryAccountsGetFreshPassword(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 2, libOptions{})
		v.putSet(t, "s", "svc0", "svc1")
		for i := range 2 {
			if v.binds(libSvcDN(i), libSvcPW(i)) {
				t.Fatalf("svc%d still binds with its password from before the set", i)
			}
			a := v.account(t, "s", libSvcName(i))
			if !a.Ready || a.New != "" || !v.binds(libSvcDN(i), a.Password) {
				t.Fatalf("svc%d: record %+v does not hold the directory's password", i, a)
			}
		}
		st, err := v.e.GetLibraryStatus(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if len(st) != 2 || !st["svc0"].Available || !st["svc1"].Available {
			t.Fatalf("status %+v", st)
		}
	})
}

func TestCheckOutAndCheckIn(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, 2, libOptions{})
		v.putSet(t, "s", "svc0", "svc1")
		alice := libCaller("tok-a", "ent-a")
		co, err := v.e.CheckOut(alice, "s", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if co.ServiceAccountName != "svc0" {
			t.Fatalf("checked out %q, want the first available, svc0", co.ServiceAccountName)
		}
		if !v.binds(libSvcDN(0), co.Password) {
			t.Fatal("checked-out password does not bind")
		}
		if !co.Lease.Renewable || co.Lease.ExpireTime.Sub(co.Lease.IssueTime) != 24*time.Hour || co.Lease.MaxTTL != 24*time.Hour {
			t.Fatalf("lease %+v: want renewable, 24h, max 24h", co.Lease)
		}
		if !strings.HasPrefix(co.Lease.ID, "ldap/library/s/check-out/") {
			t.Fatalf("lease id %q", co.Lease.ID)
		}
		st, _ := v.e.GetLibraryStatus(alice, "s")
		if want := (AccountStatus{BorrowerClientToken: "tok-a", BorrowerEntityID: "ent-a"}); st["svc0"] != want || !st["svc1"].Available {
			t.Fatalf("status %+v", st)
		}
		in, err := v.e.CheckIn(alice, "s", CheckInRequest{})
		if err != nil || !slices.Equal(in, []string{"svc0"}) {
			t.Fatalf("check-in %v %v", in, err)
		}
		if v.binds(libSvcDN(0), co.Password) {
			t.Fatal("the returned password still binds after check-in")
		}
		if a := v.account(t, "s", "svc0"); !v.binds(libSvcDN(0), a.Password) {
			t.Fatal("stored password does not bind after check-in")
		}
		if st, _ := v.e.GetLibraryStatus(alice, "s"); st["svc0"] != (AccountStatus{Available: true}) {
			t.Fatalf("status after check-in %+v", st["svc0"])
		}
		// The lease went with the check-in.
		_, err = v.leases.Get(context.Background(), co.Lease.ID)
		wantKind(t, err, keel.KindNotFound)
		// Checking in again: no error, nothing listed.
		in, err = v.e.CheckIn(alice, "s", CheckInRequest{ServiceAccountNames: []string{"svc0"}})
		if err != nil || len(in) != 0 {
			t.Fatalf("second check-in %v %v", in, err)
		}
	})
}

func TestCheckOutTTL(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		for name, tc := range map[string]struct {
			setTTL, setMax, req, want time.Duration
		}{
			"default is the set's ttl":   {time.Hour, 2 * time.Hour, 0, time.Hour},
			"lower request kept":         {time.Hour, 2 * time.Hour, time.Minute, time.Minute},
			"higher request capped":      {time.Hour, 2 * time.Hour, 3 * time.Hour, time.Hour},
			"unlimited set takes req":    {0, 0, 5 * time.Hour, 5 * time.Hour},
			"unlimited set, no request":  {0, 0, 0, 768 * time.Hour},
			"unlimited ttl, limited max": {0, time.Hour, 0, time.Hour},
		} {
			t.Run(name, func(t *testing.T) {
				v := newLibEnv(t, open, 1, libOptions{})
				if err := v.e.PutLibrarySet(context.Background(), "s", LibrarySetRequest{ServiceAccountNames: []string{"svc0"},
					TTL: libPtr(tc.setTTL), MaxTTL: libPtr(tc.setMax)}); err != nil {
					t.Fatal(err)
				}
				co, err := v.e.CheckOut(libCaller("t", ""), "s", CheckOutRequest{TTL: tc.req})
				if err != nil {
					t.Fatal(err)
				}
				if got := co.Lease.TTL(co.Lease.IssueTime); got != tc.want {
					t.Fatalf("lease ttl %s, want %s", got, tc.want)
				}
			})
		}
		t.Run("negative", func(t *testing.T) {
			v := newLibEnv(t, open, 1, libOptions{})
			v.putSet(t, "s", "svc0")
			_, err := v.e.CheckOut(libCaller("t", ""), "s", CheckOutRequest{TTL: -time.Second})
			wantKind(t, err, keel.KindInvalid)
		})
	})
}

func TestCheckOutNoneAvailable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, 1, libOptions{})
		v.putSet(t, "s", "svc0")
		if _, err := v.e.CheckOut(libCaller("a", ""), "s", CheckOutRequest{}); err != nil {
			t.Fatal(err)
		}
		_, err := v.e.CheckOut(libCaller("b", ""), "s", CheckOutRequest{})
		if !errors.Is(err, ErrNoAccountAvailable) {
			t.Fatalf("error %v, want ErrNoAccountAvailable", err)
		}
		wantKind(t, err, keel.KindConflict)
		_, err = v.e.CheckOut(libCaller("b", ""), "missing", CheckOutRequest{})
		wantKind(t, err, keel.KindNotFound)
	})
}

func TestCheckOutWithoutLeaseManager(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, 1, libOptions{noLeases: true})
		v.putSet(t, "s", "svc0")
		_, err := v.e.CheckOut(libCaller("a", ""), "s", CheckOutRequest{})
		wantKind(t, err, keel.KindUnavailable)
		if st, _ := v.e.GetLibraryStatus(context.Background(), "s"); !st["svc0"].Available {
			t.Fatal("failed check-out took the account")
		}
	})
}

func TestCheckInEnforcement(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		for name, tc := range map[string]struct {
			disable bool
			who     context.Context
			manage  bool
			ok      bool
		}{
			"borrower by token":         {false, libCaller("tok-a", "other"), false, true},
			"borrower by entity":        {false, libCaller("tok-x", "ent-a"), false, true},
			"another caller":            {false, libCaller("tok-b", "ent-b"), false, false},
			"anonymous caller":          {false, context.Background(), false, false},
			"enforcement disabled":      {true, libCaller("tok-b", "ent-b"), false, true},
			"manage path":               {false, libCaller("tok-b", "ent-b"), true, true},
			"another caller, no names":  {false, libCaller("tok-b", "ent-b"), false, false},
			"manage path without names": {false, libCaller("tok-b", "ent-b"), true, true},
		} {
			t.Run(name, func(t *testing.T) {
				v := newLibEnv(t, open, 1, libOptions{})
				if err := v.e.PutLibrarySet(context.Background(), "s", LibrarySetRequest{ServiceAccountNames: []string{"svc0"},
					DisableCheckInEnforcement: libPtr(tc.disable)}); err != nil {
					t.Fatal(err)
				}
				co, err := v.e.CheckOut(libCaller("tok-a", "ent-a"), "s", CheckOutRequest{})
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				if !strings.Contains(name, "no names") && !strings.Contains(name, "without names") {
					names = []string{"svc0"}
				}
				in, err := v.e.CheckIn(tc.who, "s", CheckInRequest{ServiceAccountNames: names, Manage: tc.manage})
				switch {
				case tc.ok:
					if err != nil || !slices.Equal(in, []string{"svc0"}) {
						t.Fatalf("check-in %v %v", in, err)
					}
					if v.binds(libSvcDN(0), co.Password) {
						t.Fatal("password still binds")
					}
				case names == nil:
					// Without names, another caller holds nothing to check in.
					if err != nil || len(in) != 0 {
						t.Fatalf("check-in %v %v, want nothing", in, err)
					}
				default:
					wantKind(t, err, keel.KindForbidden)
				}
				if !tc.ok {
					if st, _ := v.e.GetLibraryStatus(context.Background(), "s"); st["svc0"].Available {
						t.Fatal("refused check-in freed the account")
					}
					if !v.binds(libSvcDN(0), co.Password) {
						t.Fatal("refused check-in changed the password")
					}
				}
			})
		}
	})
}

func TestCheckInNames(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, 3, libOptions{})
		v.putSet(t, "s", "svc0", "svc1", "svc2")
		alice, bob := libCaller("a", ""), libCaller("b", "")
		for _, ctx := range []context.Context{alice, alice, bob} {
			if _, err := v.e.CheckOut(ctx, "s", CheckOutRequest{}); err != nil {
				t.Fatal(err)
			}
		}
		// alice holds two: she must name them.
		_, err := v.e.CheckIn(alice, "s", CheckInRequest{})
		wantKind(t, err, keel.KindInvalid)
		if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "ServiceAccountNames" {
			t.Fatalf("field errors %v", fe)
		}
		// bob holds one: no names needed.
		in, err := v.e.CheckIn(bob, "s", CheckInRequest{})
		if err != nil || !slices.Equal(in, []string{"svc2"}) {
			t.Fatalf("bob's check-in %v %v", in, err)
		}
		// A name not in the set.
		_, err = v.e.CheckIn(alice, "s", CheckInRequest{ServiceAccountNames: []string{"svc0", "alice"}})
		wantKind(t, err, keel.KindInvalid)
		// A list with an account checked in already: listed are only those
		// this call checked in.
		in, err = v.e.CheckIn(alice, "s", CheckInRequest{ServiceAccountNames: []string{"svc2", "svc1", "svc0"}})
		if err != nil || !slices.Equal(in, []string{"svc1", "svc0"}) {
			t.Fatalf("alice's check-in %v %v", in, err)
		}
		// A list naming another's account refuses the whole call.
		if _, err := v.e.CheckOut(bob, "s", CheckOutRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := v.e.CheckOut(alice, "s", CheckOutRequest{}); err != nil {
			t.Fatal(err)
		}
		_, err = v.e.CheckIn(alice, "s", CheckInRequest{ServiceAccountNames: []string{"svc1", "svc0"}})
		wantKind(t, err, keel.KindForbidden)
		if st, _ := v.e.GetLibraryStatus(alice, "s"); st["svc1"].Available {
			t.Fatal("refused call checked alice's account in")
		}
	})
}

func TestLibraryRefusesChangesWhileCheckedOut(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 2, libOptions{})
		v.putSet(t, "s", "svc0", "svc1")
		if _, err := v.e.CheckOut(libCaller("a", ""), "s", CheckOutRequest{}); err != nil {
			t.Fatal(err)
		}
		wantKind(t, v.e.DeleteLibrarySet(ctx, "s"), keel.KindConflict)
		err := v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{ServiceAccountNames: []string{"svc1"}})
		wantKind(t, err, keel.KindConflict)
		s, err := v.e.GetLibrarySet(ctx, "s")
		if err != nil || !slices.Equal(s.ServiceAccountNames, []string{"svc0", "svc1"}) {
			t.Fatalf("set %+v %v after refused changes", s, err)
		}
		// Removing the account that is in is fine.
		if err := v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{ServiceAccountNames: []string{"svc0"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := v.e.CheckIn(libCaller("a", ""), "s", CheckInRequest{}); err != nil {
			t.Fatal(err)
		}
		if err := v.e.DeleteLibrarySet(ctx, "s"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCheckOutLeaseEndChecksIn(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 1, libOptions{})
		v.putSet(t, "s", "svc0")
		co, err := v.e.CheckOut(libCaller("a", ""), "s", CheckOutRequest{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		v.clock.Advance(time.Minute)
		if _, err := v.leases.Step(ctx, v.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if st, _ := v.e.GetLibraryStatus(ctx, "s"); !st["svc0"].Available {
			t.Fatal("account not back after its lease ended")
		}
		if v.binds(libSvcDN(0), co.Password) {
			t.Fatal("password still binds after the lease ended")
		}
		// The next borrower's check-out is not ended by the old lease.
		co2, err := v.e.CheckOut(libCaller("b", ""), "s", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		changes := v.dir.Changes()
		if err := (revoker{v.e}).Revoke(ctx, co.Lease); err != nil {
			t.Fatal(err)
		}
		if v.dir.Changes() != changes || !v.binds(libSvcDN(0), co2.Password) {
			t.Fatal("revoking an ended lease again touched the new check-out")
		}
		if st, _ := v.e.GetLibraryStatus(ctx, "s"); st["svc0"].Available {
			t.Fatal("old lease checked the new borrower's account in")
		}
	})
}

func TestCheckInLeaseRevokeIsNoop(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 1, libOptions{})
		v.putSet(t, "s", "svc0")
		co, err := v.e.CheckOut(libCaller("a", ""), "s", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.e.CheckIn(libCaller("a", ""), "s", CheckInRequest{}); err != nil {
			t.Fatal(err)
		}
		co2, err := v.e.CheckOut(libCaller("b", ""), "s", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		// A late revocation of the first lease (a retry of the manager, say)
		// does not end bob's check-out.
		if err := (revoker{v.e}).Revoke(ctx, co.Lease); err != nil {
			t.Fatal(err)
		}
		if !v.binds(libSvcDN(0), co2.Password) {
			t.Fatal("late revocation changed the new borrower's password")
		}
		// Malformed lease data is a permanent error.
		bad := co.Lease
		bad.Data = []byte("{")
		wantKind(t, revoker{v.e}.Revoke(ctx, bad), keel.KindInvalid)
	})
}

// TestCheckInDirectoryFailureKeepsAccountOut: when the directory refuses
// the new password, the account stays checked out to its borrower (whose
// password still works) and a retry uses the password written ahead.
func TestCheckInDirectoryFailureKeepsAccountOut(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 1, libOptions{})
		v.putSet(t, "s", "svc0")
		alice := libCaller("a", "")
		co, err := v.e.CheckOut(alice, "s", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		v.dir.FailSetPassword(libSvcDN(0), errors.New("injected"))
		in, err := v.e.CheckIn(alice, "s", CheckInRequest{})
		if err == nil || len(in) != 0 {
			t.Fatalf("check-in %v %v, want a failure", in, err)
		}
		a := v.account(t, "s", "svc0")
		if !a.CheckedOut || a.New == "" || a.Password != co.Password {
			t.Fatalf("record %+v: want still checked out, old password kept, new one written ahead", a)
		}
		if !v.binds(libSvcDN(0), co.Password) {
			t.Fatal("borrower's password stopped working")
		}
		if _, err := v.e.CheckOut(libCaller("b", ""), "s", CheckOutRequest{}); !errors.Is(err, ErrNoAccountAvailable) {
			t.Fatalf("check-out during a failed check-in: %v", err)
		}
		if _, err := v.leases.Get(ctx, co.Lease.ID); err != nil {
			t.Fatalf("lease gone after a failed check-in: %v", err)
		}
		v.dir.FailSetPassword(libSvcDN(0), nil)
		in, err = v.e.CheckIn(alice, "s", CheckInRequest{})
		if err != nil || !slices.Equal(in, []string{"svc0"}) {
			t.Fatalf("retry %v %v", in, err)
		}
		b := v.account(t, "s", "svc0")
		if b.Password != a.New || !v.binds(libSvcDN(0), b.Password) || v.binds(libSvcDN(0), co.Password) {
			t.Fatal("retry did not set the password written ahead")
		}
	})
}

// TestCheckInStoreFailureAfterDirectoryChange: the directory took the new
// password but storing that fact failed; the write-ahead record still
// holds it, so nothing is lost, and the retry completes with it.
func TestCheckInStoreFailureAfterDirectoryChange(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		var fs *faultstore.Store
		var flaky *libFlakyDir
		v := newLibEnv(t, open, 1, libOptions{
			store: func() storage.Store { fs = faultstore.New(open(t)); return fs }(),
			dir:   func(d Directory) Directory { flaky = &libFlakyDir{Directory: d}; return flaky },
		})
		v.putSet(t, "s", "svc0")
		alice := libCaller("a", "")
		co, err := v.e.CheckOut(alice, "s", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		flaky.setAfter(func(string) error {
			fs.Fail(faultstore.OpPut, storePrefix("ldap")+prefixLibAcct, 1, errors.New("injected"))
			return nil
		})
		if _, err := v.e.CheckIn(alice, "s", CheckInRequest{}); err == nil {
			t.Fatal("check-in succeeded")
		}
		flaky.setAfter(nil)
		a := v.account(t, "s", "svc0")
		dirPW, _ := v.dir.Password(libSvcDN(0))
		if a.New != dirPW || !a.CheckedOut {
			t.Fatalf("record %+v: the directory's password %q is not written ahead", a, dirPW)
		}
		if _, err := v.e.CheckIn(alice, "s", CheckInRequest{}); err != nil {
			t.Fatal(err)
		}
		b := v.account(t, "s", "svc0")
		if b.Password != dirPW || !v.binds(libSvcDN(0), b.Password) || v.binds(libSvcDN(0), co.Password) {
			t.Fatal("retry lost the password")
		}
	})
}

// TestLeaseEndRetriedAfterDirectoryFailure: an automatic check-in that
// fails leaves the account out; the lease manager retries it.
func TestLeaseEndRetriedAfterDirectoryFailure(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 1, libOptions{})
		v.putSet(t, "s", "svc0")
		co, err := v.e.CheckOut(libCaller("a", ""), "s", CheckOutRequest{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		v.dir.SetDown(true)
		v.clock.Advance(time.Minute)
		if _, err := v.leases.Step(ctx, v.clock.Now()); err != nil {
			t.Fatal(err)
		}
		v.dir.SetDown(false)
		if st, _ := v.e.GetLibraryStatus(ctx, "s"); st["svc0"].Available {
			t.Fatal("available although its password did not change")
		}
		if !v.binds(libSvcDN(0), co.Password) {
			t.Fatal("old password lost")
		}
		v.clock.Advance(time.Hour)
		if _, err := v.leases.Step(ctx, v.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if st, _ := v.e.GetLibraryStatus(ctx, "s"); !st["svc0"].Available {
			t.Fatal("retry did not check the account in")
		}
		if v.binds(libSvcDN(0), co.Password) {
			t.Fatal("old password still binds")
		}
	})
}

// TestLibraryJoinFailureKeepsAccountUnavailable: an account whose first
// password change fails is not handed out; putting the set again retries.
func TestLibraryJoinFailureKeepsAccountUnavailable(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 2, libOptions{})
		v.dir.FailSetPassword(libSvcDN(0), errors.New("injected"))
		err := v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{ServiceAccountNames: []string{"svc0", "svc1"}})
		if err == nil {
			t.Fatal("put succeeded")
		}
		st, _ := v.e.GetLibraryStatus(ctx, "s")
		if st["svc0"].Available || !st["svc1"].Available {
			t.Fatalf("status %+v", st)
		}
		co, err := v.e.CheckOut(libCaller("a", ""), "s", CheckOutRequest{})
		if err != nil || co.ServiceAccountName != "svc1" {
			t.Fatalf("check-out %q %v: want svc1, the only ready account", co.ServiceAccountName, err)
		}
		v.dir.FailSetPassword(libSvcDN(0), nil)
		if err := v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{}); err != nil {
			t.Fatal(err)
		}
		if st, _ := v.e.GetLibraryStatus(ctx, "s"); !st["svc0"].Available {
			t.Fatal("retry did not make svc0 available")
		}
		if a := v.account(t, "s", "svc0"); !v.binds(libSvcDN(0), a.Password) {
			t.Fatal("stored password does not bind")
		}
	})
}

// TestCheckOutConcurrent: 64 concurrent check-outs of a 10-account set
// give exactly the 10 accounts, each once.
func TestCheckOutConcurrent(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, 10, libOptions{})
		v.putSet(t, "s", libSvcNames(10)...)
		var mu sync.Mutex
		got := map[string]int{}
		var unavailable int
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Go(func() {
				co, err := v.e.CheckOut(libCaller(string(rune('A'+i)), ""), "s", CheckOutRequest{})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					got[co.ServiceAccountName]++
				case errors.Is(err, ErrNoAccountAvailable):
					unavailable++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if len(got) != 10 || unavailable != 54 {
			t.Fatalf("%d accounts, %d refusals: %v", len(got), unavailable, got)
		}
		for n, c := range got {
			if c != 1 {
				t.Fatalf("%s checked out %d times", n, c)
			}
		}
		leases, err := v.leases.List(context.Background(), "ldap/library/s/check-out/", keel.ListRequest{})
		if err != nil || len(leases.Items) != 10 {
			t.Fatalf("%d leases (%v), want 10", len(leases.Items), err)
		}
	})
}

// TestCheckOutCheckInConcurrent: callers that check out and in at once
// never share an account, and every handed-out password binds while held.
func TestCheckOutCheckInConcurrent(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, 4, libOptions{})
		v.putSet(t, "s", libSvcNames(4)...)
		var mu sync.Mutex
		held := map[string]bool{}
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				ctx := libCaller(string(rune('a'+i)), "")
				for range 20 {
					co, err := v.e.CheckOut(ctx, "s", CheckOutRequest{})
					if errors.Is(err, ErrNoAccountAvailable) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if held[co.ServiceAccountName] {
						t.Errorf("%s handed out twice", co.ServiceAccountName)
					}
					held[co.ServiceAccountName] = true
					mu.Unlock()
					dn := libSvcDN(int(co.ServiceAccountName[3] - '0'))
					if !v.binds(dn, co.Password) {
						t.Errorf("%s: password does not bind while held", co.ServiceAccountName)
					}
					mu.Lock()
					held[co.ServiceAccountName] = false
					mu.Unlock()
					if _, err := v.e.CheckIn(ctx, "s", CheckInRequest{ServiceAccountNames: []string{co.ServiceAccountName}}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		st, _ := v.e.GetLibraryStatus(context.Background(), "s")
		for n, s := range st {
			if !s.Available {
				t.Fatalf("%s not available at the end", n)
			}
		}
	})
}

func TestLibraryRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		auth := &libDenyAuth{}
		v := newLibEnv(t, open, 2, libOptions{auth: auth})
		auth.reset()
		v.putSet(t, "s", "svc0")
		ctx := libCaller("a", "")
		ops := []struct {
			want string
			call func() error
		}{
			{"update ldap/library/s", func() error {
				return v.e.PutLibrarySet(ctx, "s", LibrarySetRequest{ServiceAccountNames: []string{"svc0", "svc1"}})
			}},
			{"create ldap/library/t", func() error {
				return v.e.PutLibrarySet(ctx, "t", LibrarySetRequest{ServiceAccountNames: []string{"svc9"}})
			}},
			{"read ldap/library/s", func() error { _, err := v.e.GetLibrarySet(ctx, "s"); return err }},
			{"list ldap/library/", func() error { _, err := listAll(ctx, v.e.ListLibrarySets, ""); return err }},
			{"read ldap/library/s/status", func() error { _, err := v.e.GetLibraryStatus(ctx, "s"); return err }},
			{"update ldap/library/s/check-out", func() error { _, err := v.e.CheckOut(ctx, "s", CheckOutRequest{}); return err }},
			{"update ldap/library/s/check-in", func() error {
				_, err := v.e.CheckIn(ctx, "s", CheckInRequest{})
				return err
			}},
			{"update ldap/library/manage/s/check-in", func() error {
				_, err := v.e.CheckIn(ctx, "s", CheckInRequest{Manage: true})
				return err
			}},
			{"delete ldap/library/s", func() error { return v.e.DeleteLibrarySet(ctx, "s") }},
		}
		for _, op := range ops {
			t.Run(op.want, func(t *testing.T) {
				resource := op.want[strings.IndexByte(op.want, ' ')+1:]
				auth.reset(resource)
				changes := v.dir.Changes()
				wantKind(t, op.call(), keel.KindForbidden)
				if got := auth.last(); got != op.want {
					t.Fatalf("asked %q, want %q", got, op.want)
				}
				if v.dir.Changes() != changes {
					t.Fatal("a refused call changed a password")
				}
				auth.reset()
			})
		}
		if st, _ := v.e.GetLibraryStatus(ctx, "s"); len(st) != 1 || !st["svc0"].Available {
			t.Fatalf("refused calls changed the set: %+v", st)
		}
	})
}

// TestLibraryRetriedTransactions: with every Update run twice (as a store
// that retries after a conflict does), the check-out keeps the lease of
// the run that committed, and the account record names it.
func TestLibraryRetriedTransactions(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		fs := faultstore.New(open(t))
		v := newLibEnv(t, open, 2, libOptions{store: fs})
		fs.Rerun(true)
		v.putSet(t, "s", "svc0", "svc1")
		alice := libCaller("a", "")
		co, err := v.e.CheckOut(alice, "s", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.leases.Get(ctx, co.Lease.ID); err != nil {
			t.Fatalf("returned lease not stored: %v", err)
		}
		if a := v.account(t, "s", co.ServiceAccountName); a.LeaseID != co.Lease.ID || a.Password != co.Password {
			t.Fatalf("record %+v does not match the check-out", a)
		}
		if ids, _ := v.leases.List(ctx, "ldap/library/s/check-out/", keel.ListRequest{}); len(ids.Items) != 1 {
			t.Fatalf("%d leases, want 1", len(ids.Items))
		}
		in, err := v.e.CheckIn(alice, "s", CheckInRequest{})
		if err != nil || !slices.Equal(in, []string{co.ServiceAccountName}) {
			t.Fatalf("check-in %v %v", in, err)
		}
		if a := v.account(t, "s", co.ServiceAccountName); !v.binds(a.DN, a.Password) || v.binds(a.DN, co.Password) {
			t.Fatal("stored password is not the directory's")
		}
	})
}

// TestCheckInPartialFailure: accounts are checked in one at a time; when
// one fails, those before it stay checked in and are returned.
func TestCheckInPartialFailure(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, 2, libOptions{})
		v.putSet(t, "s", "svc0", "svc1")
		alice := libCaller("a", "")
		for range 2 {
			if _, err := v.e.CheckOut(alice, "s", CheckOutRequest{}); err != nil {
				t.Fatal(err)
			}
		}
		v.dir.FailSetPassword(libSvcDN(1), errors.New("injected"))
		in, err := v.e.CheckIn(alice, "s", CheckInRequest{ServiceAccountNames: []string{"svc0", "svc1"}})
		wantKind(t, err, keel.KindUnavailable)
		if !slices.Equal(in, []string{"svc0"}) {
			t.Fatalf("checked in %v, want [svc0]", in)
		}
		st, _ := v.e.GetLibraryStatus(alice, "s")
		if !st["svc0"].Available || st["svc1"].Available {
			t.Fatalf("status %+v", st)
		}
	})
}
