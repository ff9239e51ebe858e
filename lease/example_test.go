package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/lease"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()
	clock := keel.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

	m, err := lease.New(storage.Sub(store, "lease/"), &lease.Options{Clock: clock})
	if err != nil {
		panic(err)
	}
	// The engine of the mount "ldap/" deletes the account a lease names;
	// its Issuer is the one way to issue leases under "ldap/".
	deleteAccount := func(ctx context.Context, l lease.Lease) error {
		fmt.Printf("revoking %s (%s)\n", strings.TrimPrefix(l.Path, "ldap/"), l.Data)
		return nil
	}
	ldap, err := m.Register(lease.Mount{Path: "ldap/", Revoker: lease.RevokerFunc(deleteAccount), DefaultTTL: time.Hour, MaxTTL: 2 * time.Hour})
	if err != nil {
		panic(err)
	}

	l, err := ldap.Issue(ctx, lease.IssueRequest{Path: "ldap/creds/app", Renewable: true, Data: []byte("cn=v-app-1")})
	if err != nil {
		panic(err)
	}
	fmt.Println("lease under", l.Path, "for", l.TTL(clock.Now()))

	// Renewal is capped at the max TTL, counted from the issue.
	clock.Advance(30 * time.Minute)
	r, err := m.Renew(ctx, l.ID, 3*time.Hour)
	if err != nil {
		panic(err)
	}
	fmt.Println("renewed for", r.TTL, "of", r.Requested, "asked; capped:", r.Capped)

	// The worker's step revokes what is due; here the test drives it.
	clock.Advance(2 * time.Hour)
	next, err := m.Step(ctx, clock.Now())
	if err != nil {
		panic(err)
	}
	fmt.Println("next work:", next.IsZero())
	_, err = m.Get(ctx, l.ID)
	fmt.Println("get after revocation:", errors.Is(err, keel.KindNotFound))

	// Output:
	// lease under ldap/creds/app for 1h0m0s
	// renewed for 1h30m0s of 3h0m0s asked; capped: true
	// revoking creds/app (cn=v-app-1)
	// next work: true
	// get after revocation: true
}

func ExampleManager_ListIrrevocable() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()
	m, err := lease.New(storage.Sub(store, "lease/"), &lease.Options{Clock: keel.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		panic(err)
	}
	// An engine whose directory refuses to delete its accounts, for good.
	ldap, err := m.Register(lease.Mount{Path: "ldap/", Revoker: lease.RevokerFunc(func(context.Context, lease.Lease) error {
		return lease.Permanent(errors.New("insufficient access rights"))
	})})
	if err != nil {
		panic(err)
	}
	l, err := ldap.Issue(ctx, lease.IssueRequest{Path: "ldap/creds/app"})
	if err != nil {
		panic(err)
	}
	err = m.Revoke(ctx, l.ID, true)
	fmt.Println("revoke:", keel.KindOf(err))

	// Every page, defaultIrrevocableLimit leases at a time.
	for il, err := range keel.All(ctx, 0, func(ctx context.Context, r keel.ListRequest) (keel.Page[lease.IrrevocableLease], error) {
		return m.ListIrrevocable(ctx, r)
	}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(il.Mount, il.Error)
	}
	// Only RevokeForce removes it.
	if err := m.RevokeForce(ctx, "ldap/creds/app"); err != nil {
		panic(err)
	}
	counts, _ := m.CountIrrevocable(ctx)
	fmt.Println("irrevocable left:", counts.Total)

	// Output:
	// revoke: unavailable
	// ldap/ insufficient access rights
	// irrevocable left: 0
}

func ExampleManager_List() {
	ctx := context.Background()
	store := memstore.New(nil)
	defer store.Close()
	m, err := lease.New(storage.Sub(store, "lease/"), nil)
	if err != nil {
		panic(err)
	}
	ldap, err := m.Register(lease.Mount{Path: "ldap/", Revoker: lease.Advisory})
	if err != nil {
		panic(err)
	}
	for _, role := range []string{"app", "batch", "ci", "web"} {
		if _, err := ldap.Issue(ctx, lease.IssueRequest{Path: "ldap/creds/" + role}); err != nil {
			panic(err)
		}
	}
	// A page of two names; Next is the cursor of the following page.
	p, err := m.List(ctx, "ldap/creds/", keel.ListRequest{Limit: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Items, "next:", p.Next)
	// keel.All walks every page, here two names at a time.
	var all []string
	for name, err := range keel.All(ctx, 2, func(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
		return m.List(ctx, "ldap/creds/", r)
	}) {
		if err != nil {
			panic(err)
		}
		all = append(all, name)
	}
	fmt.Println(all)

	// Output:
	// [app/ batch/] next: batch/
	// [app/ batch/ ci/ web/]
}
