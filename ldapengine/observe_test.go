package ldapengine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/keelhq/keel"
	"github.com/keelhq/keel/internal/oprecord"
	"github.com/keelhq/keel/ldapengine"
	"github.com/keelhq/keel/ldapengine/ldaptest"
	"github.com/keelhq/keel/storage/memstore"
)

// TestPasswordsAreSecretToObservers: the engine's operations are reported
// to its Observer, and neither the bind password written nor a rotated
// password read shows through Redact.
func TestPasswordsAreSecretToObservers(t *testing.T) {
	ctx := context.Background()
	dir := ldaptest.NewDirectory()
	dir.Add("cn=admin,dc=example,dc=org", "admin-pw")
	dir.Add("uid=app,ou=users,dc=example,dc=org", "initial", "uid", "app")
	rec := &oprecord.Recorder{}
	e, err := ldapengine.New(memstore.New(nil), ldapengine.FlavorOpenLDAP, "openldap", &ldapengine.Options{Directory: dir, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	if err := e.PutConfig(ctx, ldapengine.Config{BindDN: "cn=admin,dc=example,dc=org", BindPass: "admin-pw"}); err != nil {
		t.Fatal(err)
	}
	if err := e.PutStaticRole(ctx, "app", ldapengine.StaticRoleRequest{
		Username: "app", DN: "uid=app,ou=users,dc=example,dc=org", RotationPeriod: 24 * time.Hour,
	}); err != nil {
		t.Fatal(err)
	}
	cred, err := e.GetStaticCred(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, op := range rec.Ended() {
		names = append(names, op.Name+" "+op.Resource)
		for _, v := range []any{op.Input, op.Output} {
			shown := keel.Redact(v, func(string) string { return "HIDDEN" })
			for _, secret := range []string{"admin-pw", cred.Password} {
				if strings.Contains(flatten(shown), secret) {
					t.Errorf("%s: a password shows through Redact: %v", op.Name, shown)
				}
			}
		}
	}
	want := "ldapengine.PutConfig |ldapengine.PutStaticRole app|ldapengine.GetStaticCred app"
	if got := strings.Join(names, "|"); got != want {
		t.Errorf("operations %q, want %q", got, want)
	}
}

// flatten joins every string of a redacted tree.
func flatten(v any) string {
	switch v := v.(type) {
	case map[string]any:
		var b strings.Builder
		for _, x := range v {
			b.WriteString(flatten(x) + " ")
		}
		return b.String()
	case []any:
		var b strings.Builder
		for _, x := range v {
			b.WriteString(flatten(x) + " ")
		}
		return b.String()
	case string:
		return v
	}
	return ""
}
