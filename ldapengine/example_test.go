package ldapengine_test

import (
	"context"
	"fmt"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/ldapengine/ldaptest"
	"github.com/keelhq/keel/storage"
	"github.com/keelhq/keel/storage/memstore"
)

func Example() {
	ctx := context.Background()
	dir := ldaptest.NewDirectory()
	dir.Add("cn=admin,dc=example,dc=org", "admin-pw")
	dir.Add("uid=app,ou=users,dc=example,dc=org", "initial", "uid", "app")

	e, err := ldapengine.New(memstore.New(nil), ldapengine.FlavorOpenLDAP, "openldap", &ldapengine.Options{Directory: dir})
	if err != nil {
		panic(err)
	}
	defer e.Stop()
	if err := e.PutConfig(ctx, ldapengine.Config{BindDN: "cn=admin,dc=example,dc=org", BindPass: "admin-pw"}); err != nil {
		panic(err)
	}
	if err := e.PutStaticRole(ctx, "app", ldapengine.StaticRoleRequest{
		Username: "app", DN: "uid=app,ou=users,dc=example,dc=org", RotationPeriod: 24 * time.Hour,
	}); err != nil {
		panic(err)
	}
	cred, err := e.GetStaticCred(ctx, "app")
	if err != nil {
		panic(err)
	}
	current, _ := dir.Password(cred.DN)
	fmt.Println(len(cred.Password), cred.Password == current, cred.TTL <= 24*time.Hour)
	// Output: 64 true true
}

// The lists of roles and sets come a page at a time; keel.All walks every
// page. Here two names at a time: the folder "team/" once for the roles
// under it.
func ExampleEngine_ListDynamicRoles() {
	ctx := context.Background()
	e, err := ldapengine.New(memstore.New(nil), ldapengine.FlavorLDAP, "ldap", &ldapengine.Options{Directory: ldaptest.NewDirectory()})
	if err != nil {
		panic(err)
	}
	defer e.Stop()
	creation := "dn: uid={{.Username}},ou=users,dc=example,dc=org\nobjectClass: account\nuid: {{.Username}}\n"
	deletion := "dn: uid={{.Username}},ou=users,dc=example,dc=org\nchangetype: delete\n"
	for _, name := range []string{"web", "team/a", "db", "team/b", "ops"} {
		if err := e.PutDynamicRole(ctx, name, ldapengine.DynamicRoleRequest{CreationLDIF: &creation, DeletionLDIF: &deletion}); err != nil {
			panic(err)
		}
	}
	first, err := e.ListDynamicRoles(ctx, "", keel.ListRequest{Limit: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Items, first.Next)
	for name, err := range keel.All(ctx, 2, func(ctx context.Context, r keel.ListRequest) (keel.Page[string], error) {
		return e.ListDynamicRoles(ctx, "", r)
	}) {
		if err != nil {
			panic(err)
		}
		fmt.Print(name, " ")
	}
	fmt.Println()
	// Output:
	// [db ops] ops
	// db ops team/ web
}

// Limits reports the size of a library set that the store's transactions
// allow: none on memstore, MaxTxReads less 8 on a store that bounds them.
func ExampleEngine_Limits() {
	for _, s := range []*memstore.Store{memstore.New(nil), memstore.New(&memstore.Options{Limits: storage.Limits{MaxTxReads: 128}})} {
		e, err := ldapengine.New(s, ldapengine.FlavorLDAP, "ldap", nil)
		if err != nil {
			panic(err)
		}
		fmt.Println(e.Limits().MaxLibraryAccounts)
	}
	// Output:
	// 0
	// 120
}
