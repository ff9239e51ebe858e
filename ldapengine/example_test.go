package ldapengine_test

import (
	"context"
	"fmt"
	"time"

	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/ldapengine/ldaptest"
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
	if err := e.WriteConfig(ctx, ldapengine.Config{BindDN: "cn=admin,dc=example,dc=org", BindPass: "admin-pw"}); err != nil {
		panic(err)
	}
	if err := e.PutStaticRole(ctx, "app", ldapengine.StaticRoleRequest{
		Username: "app", DN: "uid=app,ou=users,dc=example,dc=org", RotationPeriod: 24 * time.Hour,
	}); err != nil {
		panic(err)
	}
	cred, err := e.StaticCred(ctx, "app")
	if err != nil {
		panic(err)
	}
	current, _ := dir.Password(cred.DN)
	fmt.Println(len(cred.Password), cred.Password == current, cred.TTL <= 24*time.Hour)
	// Output: 64 true true
}
