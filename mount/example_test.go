package mount_test

import (
	"context"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/ldapengine/ldaptest"
	"github.com/keelhq/keel/mount"
	"github.com/keelhq/keel/storage/memstore"
)

// Example wires a program's secrets service: kv at "secret/", a leased kv
// mount at "team-a/", an ldap engine with a library set, and their leases,
// renewed and revoked.
func Example() {
	ctx := context.Background()
	store := memstore.New(nil) // boltstore.Open or etcdstore.New in a real program
	dir := ldaptest.NewDirectory()
	dir.Add("cn=admin,dc=example,dc=org", "admin-pw", "cn", "admin")
	dir.Add("cn=svc1,dc=example,dc=org", "pw1", "cn", "svc1")

	table, err := mount.Open(ctx, store, &mount.Options{Authorizer: keel.AllowAll{}, Directory: dir, Defaults: mount.VaultDefaults()})
	if err != nil {
		panic(err)
	}
	defer table.Close()
	_, err = table.Enable(ctx, mount.EnableRequest{Path: "team-a/", Type: "kv", MaxTTL: time.Hour,
		Options: map[string]string{"leased_passthrough": "true"}})
	if err != nil {
		panic(err)
	}

	secret, _, _ := table.Route("team-a/db")
	if err := secret.KV.Write(ctx, "db", map[string]any{"password": "s3cr3t", "ttl": "30m"}); err != nil {
		panic(err)
	}
	s, err := secret.KV.Read(ctx, "db")
	if err != nil {
		panic(err)
	}
	l, err := table.Leases().Get(ctx, s.LeaseID)
	fmt.Println("kv lease found:", err == nil, l.Path)

	ldap, _, _ := table.Route("ldap/")
	if err := ldap.LDAP.PutConfig(ctx, ldapengine.Config{BindDN: "cn=admin,dc=example,dc=org", BindPass: "admin-pw"}); err != nil {
		panic(err)
	}
	if err := ldap.LDAP.PutLibrarySet(ctx, "team", ldapengine.LibrarySetRequest{ServiceAccountNames: []string{"svc1"}}); err != nil {
		panic(err)
	}
	co, err := ldap.LDAP.CheckOut(keel.WithPrincipal(ctx, keel.Principal{ID: "app", ClientTokenID: "t1"}), "team", ldapengine.CheckOutRequest{})
	if err != nil {
		panic(err)
	}
	_, err = table.Leases().Get(ctx, co.Lease.ID)
	fmt.Println("check-out", co.ServiceAccountName, "lease found:", err == nil)

	// Revoking the lease checks the account back in.
	if err := table.Leases().Revoke(ctx, co.Lease.ID, true); err != nil {
		panic(err)
	}
	st, _ := ldap.LDAP.GetLibraryStatus(ctx, "team")
	fmt.Println("available again:", st["svc1"].Available)

	// Output:
	// kv lease found: true team-a/db
	// check-out svc1 lease found: true
	// available again: true
}
