package ldaptest_test

import (
	"context"
	"fmt"

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
	if err := e.PutConfig(ctx, ldapengine.Config{BindDN: "cn=admin,dc=example,dc=org", BindPass: "admin-pw"}); err != nil {
		panic(err)
	}
	if err := e.RotateRoot(ctx); err != nil {
		panic(err)
	}
	pw, _ := dir.Password("cn=admin,dc=example,dc=org")
	fmt.Println(pw != "admin-pw", len(pw), dir.Changes())
	// Output: true 64 1
}
