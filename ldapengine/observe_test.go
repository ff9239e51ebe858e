package ldapengine_test

import (
	"context"
	"errors"
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

// TestWorkerRotationsAreObserved: each rotation the worker makes of a due
// static role is reported as the operation ldapengine.Rotate, with its
// outcome: a success, then a failure when the directory refuses the
// change.
func TestWorkerRotationsAreObserved(t *testing.T) {
	ctx := context.Background()
	clock := keel.NewFakeClock(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	dir := ldaptest.NewDirectory()
	dir.Add("cn=admin,dc=example,dc=org", "admin-pw")
	const dn = "uid=app,ou=users,dc=example,dc=org"
	dir.Add(dn, "initial", "uid", "app")
	rec := &oprecord.Recorder{}
	e, err := ldapengine.New(memstore.New(nil), ldapengine.FlavorOpenLDAP, "openldap", &ldapengine.Options{Directory: dir, Observer: rec, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	if err := e.PutConfig(ctx, ldapengine.Config{BindDN: "cn=admin,dc=example,dc=org", BindPass: "admin-pw"}); err != nil {
		t.Fatal(err)
	}
	if err := e.PutStaticRole(ctx, "app", ldapengine.StaticRoleRequest{Username: "app", DN: dn, RotationPeriod: time.Hour}); err != nil {
		t.Fatal(err)
	}
	rotations := func() []keel.Op { return rec.Named("ldapengine.Rotate") }
	if n := len(rotations()); n != 0 {
		t.Fatalf("%d worker rotations before any is due", n)
	}
	if _, err := e.Step(ctx, clock.Now().Add(time.Hour+time.Second)); err != nil {
		t.Fatal(err)
	}
	ops := rotations()
	if len(ops) != 1 || ops[0].Resource != "app" || ops[0].Err != nil {
		t.Fatalf("after the first due rotation: %+v, want one ldapengine.Rotate of app that succeeded", ops)
	}
	dir.FailSetPassword(dn, errors.New("the directory refuses"))
	if _, err := e.Step(ctx, clock.Now().Add(2*time.Hour+2*time.Second)); err != nil {
		t.Fatal(err)
	}
	ops = rotations()
	if len(ops) != 2 || ops[1].Err == nil {
		t.Fatalf("after a refused rotation: %+v, want a second ldapengine.Rotate with its error", ops)
	}
}
