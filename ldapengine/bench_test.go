package ldapengine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
	"github.com/keelhq/keel/internal/everystore"
	"github.com/keelhq/keel/ldapengine/internal/slapdtest"
	"github.com/keelhq/keel/storage/memstore"
)

// BenchmarkRotateStatic is one rotation of a static role (RotateRole):
// against the fake directory on memstore, and against a real slapd beside
// its yardstick, what a rotation costs the directory done with go-ldap
// alone (dial, bind, Password Modify, close), in the same run.
//
//	go test -run '^$' -bench RotateStatic ./ldapengine/
func BenchmarkRotateStatic(b *testing.B) {
	ctx := context.Background()
	srv := slapdtest.Start(b) // for both slapd cases
	b.Run("slapd-raw-go-ldap-yardstick", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			conn, err := ldap.DialURL(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			if err := conn.Bind(slapdtest.BindDN, slapdtest.BindPW); err != nil {
				b.Fatal(err)
			}
			if _, err := conn.PasswordModify(ldap.NewPasswordModifyRequest(slapdtest.BobDN, "", fmt.Sprintf("raw-%d", i))); err != nil {
				b.Fatal(err)
			}
			conn.Close()
		}
	})
	b.Run("fake", func(b *testing.B) {
		v := newEnv(b, everystore.Mem, FlavorOpenLDAP, nil)
		v.configure(b)
		if err := v.e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: aliceDN, RotationPeriod: time.Hour, SkipImportRotation: libPtr(true)}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := v.e.RotateRole(ctx, "alice"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("slapd", func(b *testing.B) {
		e, err := New(memstore.New(nil), FlavorOpenLDAP, "openldap", nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.PutConfig(ctx, Config{BindDN: slapdtest.BindDN, BindPass: slapdtest.BindPW, URL: srv.URL}); err != nil {
			b.Fatal(err)
		}
		if err := e.PutStaticRole(ctx, "alice", StaticRoleRequest{Username: "alice", DN: slapdtest.AliceDN, RotationPeriod: time.Hour, SkipImportRotation: libPtr(true)}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := e.RotateRole(ctx, "alice"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStep is one worker Step with 10 roles due among 100 and among
// 10,000: the cost follows the due roles, not the total. Each iteration
// moves the clock by the due roles' period, so that the same 10 are due
// again; the others are due in years.
func BenchmarkStep(b *testing.B) {
	for _, total := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("roles=%d/due=10", total), func(b *testing.B) {
			ctx := context.Background()
			v := newEnv(b, everystore.Mem, FlavorOpenLDAP, nil)
			v.configure(b)
			const due, period = 10, minRotationPeriod
			for i := range total {
				dn := fmt.Sprintf("uid=u%05d,ou=users,dc=example,dc=org", i)
				v.dir.Add(dn, "initial")
				p := 100_000 * time.Hour
				if i%(total/due) == 0 {
					p = period
				}
				if err := v.e.PutStaticRole(ctx, fmt.Sprintf("r%05d", i), StaticRoleRequest{Username: dn, DN: dn, RotationPeriod: p, SkipImportRotation: libPtr(true)}); err != nil {
					b.Fatal(err)
				}
			}
			now := t0
			changes := v.dir.Changes()
			n := 0
			for b.Loop() {
				now = now.Add(period)
				if _, err := v.e.Step(ctx, now); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if got := v.dir.Changes() - changes; got != due*n {
				b.Fatalf("%d rotations in %d steps, want %d", got, n, due*n)
			}
		})
	}
}
