package ldapengine

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/storagetest"
)

// borrowerEnv is a library engine whose engine and lease manager share a
// keel.RuleAuthorizer (as in package mount), with the set "s" of svc0 and
// a borrower whose policy grants update on the set's check-out and
// check-in paths only: no right on sys/leases. Both log to log.
func borrowerEnv(t *testing.T, open everystore.Open) (v *libEnv, borrower context.Context, log *levelLog) {
	t.Helper()
	auth, err := keel.NewRuleAuthorizer(map[string][]keel.Rule{"borrower": {
		{Path: "ldap/library/s/check-out", Capabilities: []keel.Capability{keel.CapUpdate}},
		{Path: "ldap/library/s/check-in", Capabilities: []keel.Capability{keel.CapUpdate}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	log = &levelLog{}
	v = newLibEnv(t, open, 1, libOptions{auth: auth, leaseAuth: auth, logger: slog.New(log)})
	v.putSet(t, "s", "svc0")
	borrower = keel.WithPrincipal(context.Background(), keel.Principal{ID: "app", ClientTokenID: "tok-app", Policies: []string{"borrower"}})
	return v, borrower, log
}

// leaseKeys returns the keys of the lease manager in v's store: records
// and index entries.
func (v *libEnv) leaseKeys(t testing.TB) []string {
	t.Helper()
	var out []string
	for k := range storagetest.Dump(t, v.store) {
		if strings.HasPrefix(k, leasePrefix) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestCheckInEndsItsLeaseWithoutLeaseRights: a borrower with rights on its
// set's check-out and check-in paths only checks out and in; the lease is
// gone at once (record and expiry-index entry), its renewal is refused,
// its expiry revokes nothing, and nothing is logged at WARN or above.
func TestCheckInEndsItsLeaseWithoutLeaseRights(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v, borrower, log := borrowerEnv(t, open)
		co, err := v.e.CheckOut(borrower, "s", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if keys := v.leaseKeys(t); len(keys) != 2 {
			t.Fatalf("lease keys after the check-out %q, want the record and its expiry-index entry", keys)
		}
		in, err := v.e.CheckIn(borrower, "s", CheckInRequest{})
		if err != nil || !slices.Equal(in, []string{"svc0"}) {
			t.Fatalf("check-in %v %v", in, err)
		}
		_, err = v.leases.Get(libRoot(), co.Lease.ID)
		wantKind(t, err, keel.KindNotFound)
		if keys := v.leaseKeys(t); len(keys) != 0 {
			t.Fatalf("lease keys left by the check-in: %q", keys)
		}
		_, err = v.leases.Renew(libRoot(), co.Lease.ID, time.Hour)
		wantKind(t, err, keel.KindNotFound)
		if got := log.atLeast(slog.LevelWarn); len(got) != 0 {
			t.Fatalf("logged %q", got)
		}
		// The lease's end, had it stayed, would find nothing to do: no
		// password changes.
		changes := v.dir.Changes()
		v.clock.Advance(25 * time.Hour)
		if _, err := v.leases.Step(context.Background(), v.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if v.dir.Changes() != changes {
			t.Fatal("the lease manager revoked something after the check-in")
		}
	})
}

// TestSettledCheckInEndsItsLeaseUnderRules: a check-in whose password
// change lost its reply is finished by the worker, whose context carries
// no principal; under a keel.RuleAuthorizer it still ends the lease, in
// the transaction that checks the account in. Until then the lease stays,
// and its renewal is refused: the account is being checked in.
func TestSettledCheckInEndsItsLeaseUnderRules(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v, borrower, log := borrowerEnv(t, open)
		co, err := v.e.CheckOut(borrower, "s", CheckOutRequest{})
		if err != nil {
			t.Fatal(err)
		}
		v.dir.LoseReplies(libSvcDN(0), true)
		if _, err := v.e.CheckIn(borrower, "s", CheckInRequest{}); err == nil {
			t.Fatal("check-in with a lost reply succeeded")
		}
		v.dir.LoseReplies(libSvcDN(0), false)
		if _, err := v.leases.Get(libRoot(), co.Lease.ID); err != nil {
			t.Fatalf("lease of an unfinished check-in: %v", err)
		}
		_, err = v.leases.Renew(libRoot(), co.Lease.ID, time.Hour)
		wantKind(t, err, keel.KindInvalid)
		if _, err := v.e.Step(context.Background(), v.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if a := v.account(t, "s", "svc0"); !a.available() {
			t.Fatalf("account after the worker's check-in: %+v", a)
		}
		_, err = v.leases.Get(libRoot(), co.Lease.ID)
		wantKind(t, err, keel.KindNotFound)
		if keys := v.leaseKeys(t); len(keys) != 0 {
			t.Fatalf("lease keys left by the worker's check-in: %q", keys)
		}
		if got := log.atLeast(slog.LevelWarn); len(got) != 0 {
			t.Fatalf("logged %q", got)
		}
	})
}

// TestCheckOutNeedsABorrowerID: a caller with neither a client token id
// nor an entity id could never check in as the borrower; its check-out
// is refused, naming the field, and changes nothing.
func TestCheckOutNeedsABorrowerID(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		v := newLibEnv(t, open, 1, libOptions{})
		v.putSet(t, "s", "svc0")
		for name, ctx := range map[string]context.Context{
			"no principal": context.Background(),
			"no ids":       keel.WithPrincipal(context.Background(), keel.Principal{ID: "app", DisplayName: "app", Policies: []string{keel.RootPolicy}}),
		} {
			t.Run(name, func(t *testing.T) {
				before := storagetest.Dump(t, v.store)
				changes := v.dir.Changes()
				_, err := v.e.CheckOut(ctx, "s", CheckOutRequest{})
				wantKind(t, err, keel.KindInvalid)
				if fe := keel.FieldErrors(err); len(fe) != 1 || fe[0].Field != "Principal.ClientTokenID" {
					t.Fatalf("field errors %v, want Principal.ClientTokenID", fe)
				}
				if after := storagetest.Dump(t, v.store); !maps.Equal(before, after) {
					t.Fatal("a refused check-out changed the store")
				}
				if v.dir.Changes() != changes {
					t.Fatal("a refused check-out changed a password")
				}
			})
		}
		for name, ctx := range map[string]context.Context{
			"token only":  libCaller("tok", ""),
			"entity only": keel.WithPrincipal(context.Background(), keel.Principal{EntityID: "ent"}),
		} {
			t.Run(name, func(t *testing.T) {
				if _, err := v.e.CheckOut(ctx, "s", CheckOutRequest{}); err != nil {
					t.Fatal(err)
				}
				if in, err := v.e.CheckIn(ctx, "s", CheckInRequest{}); err != nil || len(in) != 1 {
					t.Fatalf("the borrower's check-in %v %v", in, err)
				}
			})
		}
	})
}

// TestRenewerRefusesStaleCheckOutLease: a check-out lease is renewed only
// while its account is checked out under it. A lease left behind by a
// check-in (as one that could not remove it did before check-ins ended
// their leases), or whose account is lent again under another lease, is
// refused and left as it was.
func TestRenewerRefusesStaleCheckOutLease(t *testing.T) {
	onEveryStore(t, func(t *testing.T, open everystore.Open) {
		ctx := context.Background()
		v := newLibEnv(t, open, 1, libOptions{})
		v.putSet(t, "s", "svc0")
		co, err := v.e.CheckOut(libCaller("a", ""), "s", CheckOutRequest{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.leases.Renew(ctx, co.Lease.ID, time.Hour); err != nil {
			t.Fatalf("renewal of a held check-out: %v", err)
		}
		// The account is checked in, its lease left behind.
		err = v.e.store.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			a, _, err := loadAccount(tx, "s", "svc0")
			if err != nil {
				return err
			}
			return putJSON(tx, acctKey("s", "svc0"), &libAccount{DN: a.DN, Password: a.Password, Ready: true})
		})
		if err != nil {
			t.Fatal(err)
		}
		stale, err := v.leases.Get(ctx, co.Lease.ID)
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.leases.Renew(ctx, co.Lease.ID, time.Hour)
		wantKind(t, err, keel.KindInvalid)
		if !strings.Contains(err.Error(), "checked in") {
			t.Fatalf("refusal %v does not say the account is checked in", err)
		}
		if got, _ := v.leases.Get(ctx, co.Lease.ID); !got.ExpireTime.Equal(stale.ExpireTime) || !got.LastRenewalTime.Equal(stale.LastRenewalTime) {
			t.Fatalf("refused renewal changed the lease: %+v, was %+v", got, stale)
		}
		// Lent again: the new lease renews, the old one does not.
		co2, err := v.e.CheckOut(libCaller("b", ""), "s", CheckOutRequest{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.leases.Renew(ctx, co.Lease.ID, time.Hour)
		wantKind(t, err, keel.KindInvalid)
		if _, err := v.leases.Renew(ctx, co2.Lease.ID, time.Hour); err != nil {
			t.Fatalf("renewal of the new check-out: %v", err)
		}
		// The set is gone: nothing is checked out under the lease.
		r := revoker{v.e}
		gone := co2.Lease
		gone.Data = []byte(`{"set":"other","account":"svc0"}`)
		wantKind(t, r.Renew(ctx, gone, time.Hour), keel.KindInvalid)
		bad := co2.Lease
		bad.Data = []byte("{")
		wantKind(t, r.Renew(ctx, bad, time.Hour), keel.KindInvalid)
		// Dynamic credentials renew as before.
		if err := r.Renew(ctx, lease.Lease{ID: "ldap/creds/app/x", Path: "ldap/creds/app"}, time.Hour); err != nil {
			t.Fatalf("renewal of a dynamic credential's lease: %v", err)
		}
	})
}

// TestEngineExportsNoRevoke: the engine's Revoker is registered for it, so
// that the Engine has no exported method that revokes without a right.
func TestEngineExportsNoRevoke(t *testing.T) {
	if _, ok := reflect.TypeFor[*Engine]().MethodByName("Revoke"); ok {
		t.Fatal("Engine exports Revoke")
	}
	var r lease.Revoker = revoker{}
	if _, ok := r.(lease.Renewer); !ok {
		t.Fatal("the engine's revoker is not a lease.Renewer")
	}
	v := newLibEnv(t, everystore.Mem, 1, libOptions{})
	v.putSet(t, "s", "svc0")
	co, err := v.e.CheckOut(libCaller("a", ""), "s", CheckOutRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The lease manager reaches the engine's revoker: a revocation checks
	// the account in.
	if err := v.leases.Revoke(libRoot(), co.Lease.ID, true); err != nil {
		t.Fatal(err)
	}
	if a := v.account(t, "s", "svc0"); !a.available() || v.binds(libSvcDN(0), co.Password) {
		t.Fatalf("account after its lease's revocation: %+v", a)
	}
	if _, err := v.leases.Get(libRoot(), co.Lease.ID); !errors.Is(err, keel.KindNotFound) {
		t.Fatalf("lease after its revocation: %v", err)
	}
}
